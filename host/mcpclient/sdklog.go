package mcpclient

import (
	"context"
	"log/slog"
)

// sdkLogger is the go-sdk's logger: its info lines (sessions connecting,
// initialized) are routine, so they go out at debug; warnings and errors
// keep their level.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(demote{log.Handler()}).With("from", "go-sdk")
}

type demote struct{ slog.Handler }

func (d demote) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l = slog.LevelDebug
	}
	return d.Handler.Enabled(ctx, l)
}

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level = slog.LevelDebug
	}
	return d.Handler.Handle(ctx, r)
}

func (d demote) WithAttrs(a []slog.Attr) slog.Handler { return demote{d.Handler.WithAttrs(a)} }
func (d demote) WithGroup(n string) slog.Handler      { return demote{d.Handler.WithGroup(n)} }
