// Package stall tells the watchdog whether a part of the daemon still makes
// progress: a Section is code that must return soon (a frame handler), and
// Lock finds a mutex that is never released (a deadlock).
package stall

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Section counts entries into and exits from code that must return soon.
// The zero value is ready to use.
type Section struct {
	n atomic.Uint64 // odd while a call is inside

	mu   sync.Mutex
	last uint64
}

// Enter marks the start of a call; Leave its end. Calls must not overlap.
func (s *Section) Enter() { s.n.Add(1) }
func (s *Section) Leave() { s.n.Add(1) }

// Stuck reports whether one call has been inside the section since the
// previous Stuck: asked once per watchdog period, a true answer means that
// call has run for at least a period.
func (s *Section) Stuck() bool {
	n := s.n.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	stuck := n%2 == 1 && n == s.last
	s.last = n
	return stuck
}

// ErrHeld is returned by Lock when the mutex stayed held until ctx ended.
var ErrHeld = errors.New("a lock is held and not released")

// Lock reports whether mu can be taken before ctx ends; it takes mu and
// releases it at once. It never blocks past ctx, so a deadlocked mutex
// leaves no goroutine behind.
func Lock(ctx context.Context, mu *sync.Mutex) error {
	for !mu.TryLock() {
		select {
		case <-ctx.Done():
			return ErrHeld
		case <-time.After(time.Millisecond):
		}
	}
	mu.Unlock()
	return nil
}
