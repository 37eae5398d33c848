// Package pace holds back a signal that comes too often: a Pacer passes the
// first signal at once and folds those that follow within its interval into
// one, passed when the interval has run out. The last signal is never lost,
// so a receiver that reads the state when called sees the latest; and it is
// called at most once per interval, however fast the signals come.
package pace

import (
	"sync"
	"time"
)

// Pacer calls its function for signals, at most once per interval.
type Pacer struct {
	interval time.Duration
	fire     func()

	mu      sync.Mutex
	last    time.Time   // when fire was last called
	due     *time.Timer // a call folded signals wait for; nil when none
	stopped bool
}

// New returns a Pacer that calls fire. fire runs on the goroutine of the
// Signal that passes at once, or on a timer's; it should not block for long.
func New(interval time.Duration, fire func()) *Pacer {
	return &Pacer{interval: interval, fire: fire}
}

// Signal asks for a call of fire: now when the last was at least an interval
// ago, else once when the interval has run out (with any other signals that
// came meanwhile).
func (p *Pacer) Signal() {
	p.mu.Lock()
	if p.stopped || p.due != nil {
		p.mu.Unlock()
		return
	}
	wait := p.interval - time.Since(p.last)
	if wait > 0 {
		p.due = time.AfterFunc(wait, p.fold)
		p.mu.Unlock()
		return
	}
	p.call()
}

// fold calls fire for the signals that waited.
func (p *Pacer) fold() {
	p.mu.Lock()
	p.due = nil
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.call()
}

// call notes the time and calls fire; p.mu is held, and released first.
func (p *Pacer) call() {
	p.last = time.Now()
	p.mu.Unlock()
	p.fire()
}

// Flush calls fire now for the signals that wait, if any, and lets the next
// signal pass at once: for when the receiver has just taken the whole state
// by other means, which starts a new interval of its own.
func (p *Pacer) Flush() {
	p.mu.Lock()
	p.last = time.Time{}
	if p.stopped || p.due == nil {
		p.mu.Unlock()
		return
	}
	p.due.Stop()
	p.due = nil
	p.mu.Unlock()
	p.fire()
}

// Stop drops a call that is waiting and every later signal.
func (p *Pacer) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.due != nil {
		p.due.Stop()
		p.due = nil
	}
}
