package trigger

import "time"

// DefaultDebounce is how long a button's level must hold before it counts.
const DefaultDebounce = 20 * time.Millisecond

// Edge is a raw change of a button's level, as the GPIO line reports it.
type Edge struct {
	At      time.Duration // when, on a monotonic clock with any origin
	Pressed bool          // the level after the change, already mapped through the active level
}

// Action is what a Debouncer decides: a press or a release.
type Action string

// The actions.
const (
	Pressed  Action = "press"
	Released Action = "release"
)

// Debouncer turns the raw edges of a push button into presses and releases.
// A level counts once it has held, without another edge, for the window,
// measured between the edges' own timestamps (and, for the last edge, the time
// given to Settle): bounces and glitches shorter than the window are ignored,
// presses and releases alternate, and a release whose press was never
// reported (the button was held when the Debouncer started) is ignored.
//
// It is pure: no clock, no goroutine. The caller feeds edges, asks Due when
// the pending level will have held long enough, and calls Settle then.
type Debouncer struct {
	window   time.Duration
	stable   bool          // the debounced level
	reported bool          // the stable press was reported with Pressed
	raw      bool          // the level after the last edge
	rawAt    time.Duration // when the last edge happened
}

// NewDebouncer returns a Debouncer with the given window whose button starts
// at the given level. A button that starts pressed is not reported as
// pressed, and so its release is not reported either.
func NewDebouncer(window time.Duration, pressed bool) *Debouncer {
	if window < 0 {
		window = 0
	}
	return &Debouncer{window: window, stable: pressed, raw: pressed}
}

// Feed takes the next raw edge. If the level before it had already held for
// the window (Settle was not called in time), that level is decided now and
// returned.
func (d *Debouncer) Feed(e Edge) (Action, bool) {
	a, ok := d.Settle(e.At)
	d.raw, d.rawAt = e.Pressed, e.At
	return a, ok
}

// Due reports when the pending level will have held for the window; ok is
// false when nothing is pending.
func (d *Debouncer) Due() (at time.Duration, ok bool) {
	if d.raw == d.stable {
		return 0, false
	}
	return d.rawAt + d.window, true
}

// Settle decides the pending level if it has held for the window at now.
func (d *Debouncer) Settle(now time.Duration) (Action, bool) {
	if d.raw == d.stable || now-d.rawAt < d.window {
		return "", false
	}
	d.stable = d.raw
	if d.stable {
		d.reported = true
		return Pressed, true
	}
	if d.reported {
		d.reported = false
		return Released, true
	}
	return "", false
}

// Level reports the level after the last edge, debounced or not.
func (d *Debouncer) Level() bool { return d.raw }

// Held reports whether a press has been reported and not yet released.
func (d *Debouncer) Held() bool { return d.reported }
