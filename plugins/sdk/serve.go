package sdk

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agenthost/agenthost/internal/memtrim"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// EnvLogLevel is the environment variable that sets a plugin's log level:
// trace, debug (the default), info, warn or error. The host filters again.
const EnvLogLevel = "AGENTHOST_PLUGIN_LOG_LEVEL"

// RefusalMessage is what a plugin prints (on stderr, exiting with status 1)
// when it is started by hand instead of by the host.
const RefusalMessage = "This is an agenthost plugin. Put it in the plugin folder (plugins.dirs) and the host starts it; try it with `agenthost call SERVICE '{json}'`."

// idleTrim: a plugin that had no call for this long hands back the memory
// start-up and its last calls needed (see internal/memtrim): a plugin idles
// most of its life, often on a device with little memory.
const idleTrim = 5 * time.Second

// parentPollInterval is how often the plugin checks that the host still lives.
const parentPollInterval = 500 * time.Millisecond

// Serve runs the plugin until the host stops it (or dies), then exits the
// process. It never returns. Call it from main, and print nothing to stdout
// before it: stdout carries the go-plugin handshake.
//
// Serve exits with status 1, after a message on stderr, when the plugin is
// invalid (see [Validate]) or was not started by the host.
func Serve(p Plugin) {
	os.Exit(serve(p, os.Stderr))
}

func serve(p Plugin, stderr *os.File) int {
	underHost := os.Getenv(pluginv1.Handshake.MagicCookieKey) == pluginv1.Handshake.MagicCookieValue
	logger := setupLogging(stderr, logLevel(os.Getenv(EnvLogLevel)))

	srv, err := newServer(p)
	if err != nil {
		if underHost {
			logger.Error("invalid plugin, not serving", "error", err.Error())
		} else {
			fmt.Fprintf(stderr, "agenthost plugin %q is invalid and will not start:\n  %s\n",
				p.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		}
		return 1
	}
	if !underHost {
		fmt.Fprintln(stderr, RefusalMessage)
		fmt.Fprintf(stderr, "(%s %s offers: %s)\n", p.Name, p.Version, strings.Join(srv.order, ", "))
		return 1
	}

	srv.trim = memtrim.Start(memtrim.Options{GCPercent: 50, MemoryLimit: 32 << 20, IdleAfter: idleTrim})
	watchParent(parentPollInterval, func(oldPPID, newPPID int) {
		logger.Warn("host process is gone; plugin exits", "host_pid", oldPPID, "ppid", newPPID)
		os.Exit(0)
	})

	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginv1.Handshake,
		Plugins:         plugin.PluginSet{pluginv1.PluginName: &pluginv1.GRPCPlugin{Impl: srv, Speaker: speaker}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, pluginv1.ServerOptions()...))
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Level:      hclog.Info,
			Output:     stderr,
			JSONFormat: true,
		}),
	})
	return 0
}

// setupLogging makes slog's default logger (and with it the log package)
// write hclog-style JSON lines to stderr, which go-plugin on the host side
// parses and forwards with their level.
func setupLogging(w io.Writer, level slog.Level) *slog.Logger {
	l := slog.New(NewLogHandler(w, level))
	slog.SetDefault(l)
	return l
}

// NewLogHandler returns a slog.Handler that writes one JSON object per line
// in go-hclog's JSON format ("@level", "@message", "@timestamp" and the
// attributes), so that a go-plugin host logs each line with its level.
// Serve installs one writing to stderr as slog's default; plugins normally
// just use slog (or log) and never need this.
func NewLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				if t, ok := a.Value.Any().(time.Time); ok {
					return slog.String("@timestamp", t.Format("2006-01-02T15:04:05.000000Z07:00"))
				}
			case slog.LevelKey:
				if l, ok := a.Value.Any().(slog.Level); ok {
					return slog.String("@level", hclogLevel(l))
				}
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	})
}

func hclogLevel(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}

// LevelTrace is below slog.LevelDebug; the host shows it as TRACE.
const LevelTrace = slog.LevelDebug - 4

func logLevel(s string) slog.Level {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return LevelTrace
	case "info":
		return slog.LevelInfo
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelDebug
}
