package pace

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPacerFoldsAndTheLastWins: signals as fast as they come reach fire at
// most once per interval (a bound on a count over a measured window), and
// the call after the last signal sees the last state.
func TestPacerFoldsAndTheLastWins(t *testing.T) {
	const interval = 50 * time.Millisecond
	var state, seen, calls atomic.Int64
	p := New(interval, func() {
		calls.Add(1)
		seen.Store(state.Load())
	})
	defer p.Stop()
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		state.Add(1)
		p.Signal()
	}
	elapsed := time.Since(start)
	final := state.Load()
	deadline := time.Now().Add(10 * time.Second)
	for seen.Load() != final {
		if time.Now().After(deadline) {
			t.Fatalf("fire saw %d, never the last state %d", seen.Load(), final)
		}
		time.Sleep(time.Millisecond)
	}
	n := calls.Load()
	t.Logf("%d signals, %d calls in %v", final, n, elapsed)
	if most := int64(elapsed/interval) + 2; n > most {
		t.Errorf("%d calls in %v, over %d (one per %v)", n, elapsed, most, interval)
	}
}

// TestPacerFirstSignalAtOnce: a signal after a quiet interval calls fire
// before Signal returns.
func TestPacerFirstSignalAtOnce(t *testing.T) {
	var calls int
	p := New(time.Hour, func() { calls++ })
	p.Signal()
	if calls != 1 {
		t.Fatalf("%d calls after the first signal, want 1 at once", calls)
	}
	p.Signal() // within the hour: waits
	p.Signal()
	if calls != 1 {
		t.Fatalf("%d calls, want the later signals to wait", calls)
	}
	p.Stop()
}

// TestPacerStopDropsTheWaitingCall: after Stop nothing fires.
func TestPacerStopDropsTheWaitingCall(t *testing.T) {
	var calls atomic.Int64
	p := New(20*time.Millisecond, func() { calls.Add(1) })
	p.Signal()
	p.Signal() // waits for the interval
	p.Stop()
	p.Signal()
	time.Sleep(100 * time.Millisecond) // longer than the interval: a call would have come
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls, want only the first", n)
	}
}

// TestPacerFlushGivesTheWaitingCallAndLetsTheNextPass: Flush calls fire
// for a signal that waits, and the next signal passes at once; the one
// after it waits again.
func TestPacerFlushGivesTheWaitingCallAndLetsTheNextPass(t *testing.T) {
	var calls int
	p := New(time.Hour, func() { calls++ })
	defer p.Stop()
	p.Signal()
	p.Signal() // waits
	p.Flush()
	if calls != 2 {
		t.Fatalf("%d calls after Flush, want the waiting one given (2)", calls)
	}
	p.Flush() // nothing waits: no call
	p.Signal()
	if calls != 3 {
		t.Fatalf("%d calls, want the signal after Flush at once (3)", calls)
	}
	p.Signal()
	if calls != 3 {
		t.Fatalf("%d calls, want the next signal to wait", calls)
	}
}
