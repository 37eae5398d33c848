//go:build !linux

package audio

import (
	"context"
	"time"
)

func newSleeper() sleeper { return &goTimer{} }

// goTimer waits on one Go timer, made once and reset for every wait: a
// timer that stays in the runtime's heap wakes the poller without an extra
// system call each time.
type goTimer struct{ t *time.Timer }

func (g *goTimer) sleep(ctx context.Context, d time.Duration) error {
	if g.t == nil {
		g.t = time.NewTimer(d)
	} else {
		g.t.Reset(d)
	}
	select {
	case <-g.t.C:
		return nil
	case <-ctx.Done():
		g.t.Stop()
		return ctx.Err()
	}
}

func (g *goTimer) close() {} // the caller's ctx ends the wait
