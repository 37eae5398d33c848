package supervise

import (
	"sync"
	"time"
)

// life is one child as the supervisor holds it: the calls running on it,
// and its retirement (let those calls finish, then Kill).
type life struct {
	child   Child
	retired chan struct{} // closed when retire starts: no new calls, no crash reports

	// gone is closed when a call found the child dead; its watcher, not the
	// caller, reports that to the supervisor, so no call waits on it.
	gone     chan struct{}
	goneOnce sync.Once

	mu       sync.Mutex
	calls    int
	used     bool // a call was admitted
	retiring bool
	drained  chan struct{} // closed when retiring and calls reach 0
	idleT    *time.Timer
}

func newLife(c Child) *life {
	return &life{child: c, retired: make(chan struct{}), gone: make(chan struct{}), drained: make(chan struct{})}
}

// markGone records that the child died (a call found it dead, or the
// supervisor handles its crash).
func (l *life) markGone() { l.goneOnce.Do(func() { close(l.gone) }) }

func (l *life) isGone() bool {
	select {
	case <-l.gone:
		return true
	default:
		return false
	}
}

// acquire admits a call unless the child is being retired.
func (l *life) acquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retiring {
		return false
	}
	l.calls++
	l.used = true
	if l.idleT != nil {
		l.idleT.Stop()
	}
	return true
}

// release ends a call; it reports whether the child has no call left.
func (l *life) release() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls--
	if l.retiring && l.calls == 0 {
		close(l.drained)
	}
	return l.calls == 0 && !l.retiring
}

// armIdle calls f after d unless a call comes first. The timer is made
// once and reset after each call.
func (l *life) armIdle(d time.Duration, f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retiring || l.calls > 0 {
		return
	}
	if l.idleT == nil {
		l.idleT = time.AfterFunc(d, f)
		return
	}
	l.idleT.Reset(d)
}

// rearmIdle resets the idle timer armIdle made, as armIdle would; false
// when there is none yet.
func (l *life) rearmIdle(d time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idleT == nil {
		return false
	}
	if !l.retiring && l.calls == 0 {
		l.idleT.Reset(d)
	}
	return true
}

// unused reports whether no call was ever admitted.
func (l *life) unused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.used
}

// idle reports whether no call runs, for an idle stop.
func (l *life) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls == 0 && !l.retiring
}

// retire stops admitting calls, lets those in flight finish (up to grace),
// then kills the child. Only the first call does anything.
func (l *life) retire(grace time.Duration) {
	l.mu.Lock()
	if l.retiring {
		l.mu.Unlock()
		return
	}
	l.retiring = true
	close(l.retired)
	if l.idleT != nil {
		l.idleT.Stop()
	}
	if l.calls == 0 {
		close(l.drained)
	}
	l.mu.Unlock()
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-l.drained:
		case <-t.C:
		}
		t.Stop()
	}
	l.child.Kill()
}

func (l *life) isRetired() bool {
	select {
	case <-l.retired:
		return true
	default:
		return false
	}
}
