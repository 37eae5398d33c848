package pluginmgr

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// hclogToSlog returns a go-hclog logger whose lines (go-plugin's own, and the
// plugin's stderr, which go-plugin relays with the plugin's level) end up in
// log with plugin=<name>.
func hclogToSlog(log *slog.Logger, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "plugin",
		Level:      hclog.Debug,
		JSONFormat: true,
		Output:     &slogWriter{log: log.With("plugin", name)},
	})
}

// slogWriter turns hclog's JSON lines into slog records.
type slogWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *slogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *slogWriter) line(b []byte) {
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		w.log.Info(string(b))
		return
	}
	msg, _ := rec["@message"].(string)
	lvl, _ := rec["@level"].(string)
	module, _ := rec["@module"].(string)
	var attrs []any
	for k, v := range rec {
		if !strings.HasPrefix(k, "@") && k != "timestamp" && k != "plugin" && k != "path" && k != "pid" {
			attrs = append(attrs, k, v)
		}
	}
	level := slog.LevelInfo
	switch lvl {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	// go-plugin's own bookkeeping ("starting plugin", "plugin exited") is debug;
	// what the plugin itself logs keeps its level.
	if module == "plugin" && level < slog.LevelWarn {
		level = slog.LevelDebug
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}

// lineLogger logs each line a plugin writes to its stdout or stderr after the
// handshake. Output there is a plugin bug (plugins log through the SDK), so it
// is a warning.
type lineLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > 4096 {
				l.log.Warn("plugin output outside its log: " + string(l.buf))
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.log.Warn("plugin output outside its log: " + string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}
