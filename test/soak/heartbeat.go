package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// stallMin is the shortest pause of this program that counts as a stall.
const stallMin = 500 * time.Millisecond

// heartbeat ticks every 20 ms and notes every pause longer than stallMin:
// times when this program (the load, the simulator) stood still, because of
// itself or the machine. Failures then are the harness's, not the host's.
type heartbeat struct {
	started time.Time
	mu      sync.Mutex
	stalls  [][2]time.Time // from, to
}

func newHeartbeat(started time.Time) *heartbeat { return &heartbeat{started: started} }

func (h *heartbeat) run(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			if now.Sub(last) > stallMin {
				h.mu.Lock()
				h.stalls = append(h.stalls, [2]time.Time{last, now})
				h.mu.Unlock()
			}
			last = now
		}
	}
}

// near reports whether a stall overlaps [from, to].
func (h *heartbeat) near(from, to time.Time) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, st := range h.stalls {
		if st[0].Before(to) && st[1].After(from) {
			return true
		}
	}
	return false
}

type stallReport struct {
	n       int
	longest time.Duration
	when    string
	heap    int64
}

func (h *heartbeat) report() stallReport {
	var r stallReport
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.heap = int64(ms.HeapAlloc)
	if h == nil {
		return r
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r.n = len(h.stalls)
	for _, st := range h.stalls {
		if d := st[1].Sub(st[0]); d > r.longest {
			r.longest, r.when = d, fmt.Sprintf(" at t=%s", st[0].Sub(h.started).Round(time.Second))
		}
	}
	return r
}
