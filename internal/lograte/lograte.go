// Package lograte keeps a flood of like lines (refused requests, refused
// connections) from flooding the log, and journald's rate limit from then
// dropping the daemon's other lines: the first line of a kind goes out at
// once, the others within a period are counted, and the period's end
// brings one line saying how many there were.
package lograte

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter passes one line per message per period. Messages are the
// caller's constants (never outsiders' text), so its state stays small.
type Limiter struct {
	log    *slog.Logger
	period time.Duration

	mu      sync.Mutex
	held    map[string]*held
	stopped bool
}

type held struct {
	n     int
	level slog.Level
	args  []any // the last held line's
	timer *time.Timer
}

// New returns a Limiter writing to log, one line per message per period.
func New(log *slog.Logger, period time.Duration) *Limiter {
	return &Limiter{log: log, period: period, held: map[string]*held{}}
}

// Warn logs msg at warn, or counts it when a line with the same msg went
// out less than a period ago; the period's end then logs msg once more
// with the last counted line's attributes and repeated=N.
func (l *Limiter) Warn(msg string, args ...any) { l.logAt(slog.LevelWarn, msg, args) }

func (l *Limiter) logAt(level slog.Level, msg string, args []any) {
	l.mu.Lock()
	if h := l.held[msg]; h != nil && !l.stopped {
		h.n++
		h.level, h.args = level, args
		l.mu.Unlock()
		return
	}
	if !l.stopped {
		l.held[msg] = &held{timer: time.AfterFunc(l.period, func() { l.flush(msg) })}
	}
	l.mu.Unlock()
	l.log.Log(context.Background(), level, msg, args...)
}

// flush ends msg's period: the count of the lines held back, if any.
func (l *Limiter) flush(msg string) {
	l.mu.Lock()
	h := l.held[msg]
	delete(l.held, msg)
	l.mu.Unlock()
	if h != nil && h.n > 0 {
		l.log.Log(context.Background(), h.level, msg, append(h.args[:len(h.args):len(h.args)], "repeated", h.n, "period", l.period)...)
	}
}

// Stop ends every period now (logging their counts) and lets later lines
// through as they come.
func (l *Limiter) Stop() {
	l.mu.Lock()
	l.stopped = true
	var msgs []string
	for msg, h := range l.held {
		h.timer.Stop()
		msgs = append(msgs, msg)
	}
	l.mu.Unlock()
	for _, msg := range msgs {
		l.flush(msg)
	}
}
