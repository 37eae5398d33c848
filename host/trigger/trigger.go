// Package trigger owns the push-to-talk triggers that are not the control
// socket: the space bar (or Enter) of the terminal the daemon runs in, and a
// button on a GPIO line of a Raspberry Pi, read through the Linux GPIO
// character device with edge events and debounce. A trigger turns what it
// sees into Press and Release calls on a Handler; it knows nothing about turns
// or the voice server.
package trigger

import "sync"

// Handler receives presses and releases. A trigger calls it from one
// goroutine, always in order (Press, Release, Press, …), and never releases
// what it did not press.
type Handler interface {
	Press()
	Release()
}

// Toggle turns taps into a hold: the first Tap presses, the next releases.
// It is safe for concurrent use.
type Toggle struct {
	h    Handler
	mu   sync.Mutex
	down bool
}

// NewToggle returns a Toggle that drives h.
func NewToggle(h Handler) *Toggle { return &Toggle{h: h} }

// Tap presses when released and releases when pressed.
func (t *Toggle) Tap() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.down = !t.down
	if t.down {
		t.h.Press()
	} else {
		t.h.Release()
	}
}

// Up releases if the toggle is pressed, and does nothing otherwise. A trigger
// that stops calls it so that no press outlives it.
func (t *Toggle) Up() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		t.down = false
		t.h.Release()
	}
}

// Down reports whether the toggle is pressed.
func (t *Toggle) Down() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.down
}
