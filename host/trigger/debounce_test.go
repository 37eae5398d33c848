package trigger

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

// step is an action a Debouncer decided, and when.
type step struct {
	A  Action
	At time.Duration
}

func (s step) String() string { return fmt.Sprintf("%s@%v", s.A, s.At) }

// simulate drives d as the GPIO loop does: before each edge it settles at
// the time the pending level is due, if that comes first; after the last
// edge it settles once more at end.
func simulate(d *Debouncer, edges []Edge, end time.Duration) []step {
	var got []step
	add := func(at time.Duration) func(Action, bool) {
		return func(a Action, ok bool) {
			if ok {
				got = append(got, step{a, at})
			}
		}
	}
	settle := func(before time.Duration) {
		if due, ok := d.Due(); ok && due <= before {
			add(due)(d.Settle(due))
		}
	}
	for _, e := range edges {
		settle(e.At)
		add(e.At)(d.Feed(e))
	}
	settle(end)
	return got
}

// bouncy is an edge to level at t followed by n bounces 1 ms apart, ending
// on level.
func bouncy(t time.Duration, level bool, n int) []Edge {
	es := []Edge{{t, level}}
	for i := 1; i <= n; i++ {
		es = append(es, Edge{t + time.Duration(2*i-1)*ms, !level}, Edge{t + time.Duration(2*i)*ms, level})
	}
	return es
}

func TestDebouncer(t *testing.T) {
	cases := []struct {
		name    string
		start   bool // pressed at start
		edges   []Edge
		want    []step
		heldEnd bool
	}{
		{
			name:  "clean press and release",
			edges: []Edge{{100 * ms, true}, {400 * ms, false}},
			want:  []step{{Pressed, 120 * ms}, {Released, 420 * ms}},
		},
		{
			name:  "bounces within the window are ignored",
			edges: slices.Concat(bouncy(100*ms, true, 3), bouncy(400*ms, false, 4)),
			// the last bounce of the press ends at 106 ms, of the release at 408 ms
			want: []step{{Pressed, 126 * ms}, {Released, 428 * ms}},
		},
		{
			name:  "a glitch shorter than the window is nothing",
			edges: []Edge{{100 * ms, true}, {101 * ms, false}, {300 * ms, true}, {319 * ms, false}},
		},
		{
			name:  "a release without a press is ignored",
			edges: []Edge{{100 * ms, false}, {200 * ms, false}},
		},
		{
			name:    "a button held at start: its release is ignored, the next press counts",
			start:   true,
			edges:   []Edge{{100 * ms, false}, {102 * ms, true}, {103 * ms, false}, {500 * ms, true}},
			want:    []step{{Pressed, 520 * ms}},
			heldEnd: true,
		},
		{
			name: "quick presses keep their order",
			edges: slices.Concat(bouncy(0, true, 2), bouncy(50*ms, false, 2), bouncy(100*ms, true, 2),
				bouncy(150*ms, false, 2), bouncy(200*ms, true, 1)),
			want: []step{
				{Pressed, 24 * ms}, {Released, 74 * ms}, {Pressed, 124 * ms}, {Released, 174 * ms},
				{Pressed, 222 * ms},
			},
			heldEnd: true,
		},
		{
			name:    "a release shorter than the window is nothing",
			edges:   []Edge{{100 * ms, true}, {200 * ms, false}, {210 * ms, true}},
			want:    []step{{Pressed, 120 * ms}},
			heldEnd: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDebouncer(20*ms, c.start)
			got := simulate(d, c.edges, 1000*ms)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if d.Held() != c.heldEnd {
				t.Errorf("held at the end: %v, want %v", d.Held(), c.heldEnd)
			}
		})
	}
}

// A level that held for the window is decided by the next edge, even when
// Settle was not called in time (the loop woke late).
func TestDebouncerFeedDecidesALevelThatHeld(t *testing.T) {
	d := NewDebouncer(20*ms, false)
	if a, ok := d.Feed(Edge{0, true}); ok {
		t.Fatalf("the first edge decided %s at once", a)
	}
	if a, ok := d.Feed(Edge{100 * ms, false}); !ok || a != Pressed {
		t.Fatalf("the edge after a held press: %q %v, want press", a, ok)
	}
	if a, ok := d.Settle(119 * ms); ok {
		t.Fatalf("settled %s before the window passed", a)
	}
	if a, ok := d.Settle(120 * ms); !ok || a != Released {
		t.Fatalf("settle after the window: %q %v, want release", a, ok)
	}
	if a, ok := d.Settle(500 * ms); ok {
		t.Fatalf("settled %s twice", a)
	}
}

func TestDebouncerDue(t *testing.T) {
	d := NewDebouncer(20*ms, false)
	if _, ok := d.Due(); ok {
		t.Fatal("due with nothing pending")
	}
	d.Feed(Edge{10 * ms, true})
	d.Feed(Edge{15 * ms, false})
	if _, ok := d.Due(); ok {
		t.Fatal("due after a bounce back to the stable level")
	}
	d.Feed(Edge{17 * ms, true})
	if due, ok := d.Due(); !ok || due != 37*ms {
		t.Fatalf("due %v %v, want 37ms", due, ok)
	}
}

func TestToggle(t *testing.T) {
	var r recorder
	tg := NewToggle(&r)
	tg.Up() // nothing held: nothing to release
	tg.Tap()
	if !tg.Down() {
		t.Fatal("not down after one tap")
	}
	tg.Tap()
	tg.Tap()
	tg.Up()
	tg.Up()
	if got, want := r.events(), []string{"press", "release", "press", "release"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
