package pluginmgr

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestGoPluginsBrokerClosedLineIsDebug: go-plugin writes "[ERR] plugin:
// plugin acceptAndServe error: broker closed" with the standard library's
// log when a plugin ends before it dialed the host's audio door (a start
// that failed, a plugin killed at once). Through the daemon's mapping of
// go-plugin's lines (the standard log is sent there) it is a debug record;
// another error of go-plugin's stays an error. The race that writes it in
// the daemon cannot be provoked at will, so the line is written here.
func TestGoPluginsBrokerClosedLineIsDebug(t *testing.T) {
	for _, tc := range []struct {
		line string
		want slog.Level
	}{
		{"[ERR] plugin: plugin acceptAndServe error: broker closed\n", slog.LevelDebug},
		{"[ERR] plugin: plugin acceptAndServe error: listen unix: no space left on device\n", slog.LevelError},
	} {
		var out bytes.Buffer
		log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
		w := hclogToSlog(log).StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
		if _, err := w.Write([]byte(tc.line)); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); !strings.Contains(got, "level="+tc.want.String()) || !strings.Contains(got, "acceptAndServe") || strings.Contains(got, "[ERR]") {
			t.Errorf("%q gives %q, want one record at %s", tc.line, got, tc.want)
		}
	}
}
