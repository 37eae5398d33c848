// Package quietlog hands a library a logger whose routine lines (below
// warn) go out at debug: the go-sdk's info lines about sessions connecting
// and initializing are noise at info.
package quietlog

import (
	"context"
	"log/slog"
)

// For returns log for the library named from: its lines below warn at
// debug, warnings and errors at their level, each with from=<from>.
func For(log *slog.Logger, from string) *slog.Logger {
	return slog.New(demote{log.Handler()}).With("from", from)
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
