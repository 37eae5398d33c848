package pluginmgr

import (
	"context"
	"encoding/json"
	stdlog "log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/linewriter"
)

// hclogToSlog returns a go-hclog logger whose lines (go-plugin's own, and the
// plugin's stderr, which go-plugin relays with the plugin's level) end up in
// log (which carries plugin=<name>).
func hclogToSlog(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "plugin",
		Level:      hclog.Debug,
		JSONFormat: true,
		Output:     linewriter.New(0, func(line []byte) { hclogLine(log, line) }),
	})
}

// RouteStandardLog sends what the standard library's log writes (go-plugin
// writes some of its errors there, such as "[ERR] plugin: plugin
// acceptAndServe error: broker closed") through hclogLine into log, with
// the level its [ERR], [WARN], [INFO] or [DEBUG] prefix names, instead of
// raw onto stderr. For the daemon: it changes the process's standard log.
func RouteStandardLog(log *slog.Logger) {
	stdlog.SetFlags(0)
	stdlog.SetOutput(hclogToSlog(log).StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}))
}

// hclogLine turns one of hclog's JSON lines into a slog record.
func hclogLine(log *slog.Logger, b []byte) {
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		log.Info(string(b))
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
	// A plugin that ended before it dialed the host's audio door (a start
	// that failed, a plugin stopped at once): the door's end, not a fault.
	if strings.HasSuffix(msg, "acceptAndServe error: broker closed") {
		level = slog.LevelDebug
	}
	log.Log(context.Background(), level, msg, attrs...)
}

// outputLogger logs each line a plugin writes to its stdout or stderr after
// the handshake. Output there is a plugin bug (plugins log through the SDK),
// so it is a warning.
func outputLogger(log *slog.Logger) *linewriter.Writer {
	return linewriter.New(0, func(line []byte) { log.Warn("plugin output outside its log: " + string(line)) })
}
