package clip

import (
	"context"
	"fmt"
	"log/slog"
)

// LogValue is the bound the daemon's logger puts on the message and on
// each string of a log line: a service name, an argument or a server's
// output of megabytes makes a line of a few kilobytes.
const LogValue = 4 << 10

// Handler returns a slog.Handler that hands every record on to h with its
// message and every string among its attributes cut to at most n bytes by
// String: keys, strings, errors, Stringers, byte and string slices, in
// groups and in attributes added by With. Installed where a logger is
// built, it clips every line, so no call site can forget to.
func Handler(h slog.Handler, n int) slog.Handler { return handler{h, n} }

type handler struct {
	h slog.Handler
	n int
}

func (c handler) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }

func (c handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message, c.n), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(c.attr(a))
		return true
	})
	return c.h.Handle(ctx, out)
}

func (c handler) WithAttrs(as []slog.Attr) slog.Handler {
	return handler{c.h.WithAttrs(c.attrs(as)), c.n}
}

func (c handler) WithGroup(name string) slog.Handler {
	return handler{c.h.WithGroup(String(name, c.n)), c.n}
}

func (c handler) attrs(as []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = c.attr(a)
	}
	return out
}

func (c handler) attr(a slog.Attr) slog.Attr {
	return slog.Attr{Key: String(a.Key, c.n), Value: c.value(a.Value.Resolve())}
}

func (c handler) value(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > c.n {
			return slog.StringValue(String(s, c.n))
		}
	case slog.KindGroup:
		return slog.GroupValue(c.attrs(v.Group())...)
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		case []byte:
			s = string(x)
		case []string:
			return slog.AnyValue(c.strings(x))
		default:
			return v
		}
		if len(s) > c.n {
			return slog.StringValue(String(s, c.n))
		}
	}
	return v
}

// strings cuts a list whose strings take more than n bytes in all: each
// string to the bytes left, and the list where none are left, with a last
// element that says how many were left out.
func (c handler) strings(ss []string) []string {
	size := 0
	for _, s := range ss {
		size += len(s)
	}
	if size <= c.n {
		return ss
	}
	var out []string
	size = 0
	for _, s := range ss {
		if size >= c.n {
			break
		}
		s = String(s, c.n-size)
		out = append(out, s)
		size += len(s)
	}
	if left := len(ss) - len(out); left > 0 {
		out = append(out, fmt.Sprintf("… (%d more)", left))
	}
	return out
}
