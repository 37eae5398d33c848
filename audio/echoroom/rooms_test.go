package echoroom

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestWorldRoomsDecayAtTheirRT60(t *testing.T) {
	for _, r := range WorldRooms(7, 2) {
		h := r.Response(0)
		// Schroeder's backward integration; RT60 from its -5…-25 dB fall.
		edc := make([]float64, len(h))
		var s float64
		for i := len(h) - 1; i >= 0; i-- {
			s += h[i] * h[i]
			edc[i] = s
		}
		at := func(db float64) float64 {
			for i, e := range edc {
				if 10*math.Log10(e/edc[0]) <= db {
					return float64(i) / 16000
				}
			}
			return math.NaN()
		}
		rt := 3 * (at(-25) - at(-5))
		if want := r.RT60.Seconds(); math.Abs(rt-want) > 0.25*want {
			t.Errorf("%s: RT60 %.2f s, want %.2f s", r, rt, want)
		}
		if e := 10 * math.Log10(edc[0]); math.Abs(e-r.Level) > 0.01 {
			t.Errorf("%s: energy %.2f dB, want %.2f dB", r, e, r.Level)
		}
	}
}

func TestAWorldRoomRendersTheSameEveryTime(t *testing.T) {
	far := make([]int16, 16000)
	for i := range far {
		far[i] = int16(8000 * math.Sin(float64(i)*0.05))
	}
	w := World{RT60: 300 * time.Millisecond, Direct: 10 * time.Millisecond, Bulk: 50 * time.Millisecond, Level: -6, HighPass: 250, Noise: -60, MoveAt: 500 * time.Millisecond, Seed: 3}
	a, b := w.Render(far, nil), w.Render(far, nil)
	if !slices.Equal(a.Mic, b.Mic) {
		t.Fatal("two renders of one room differ")
	}
	if slices.ContainsFunc(a.Echo[:16000*60/1000-1], func(v int16) bool { return v != 0 }) {
		t.Error("echo before the bulk delay and the direct path")
	}
}

func TestConvolutionByFFTIsConvolution(t *testing.T) {
	x := make([]float64, 20000)
	h := make([]float64, 3000)
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.3)
	}
	for i := range h {
		h[i] = math.Exp(-float64(i)/500) * math.Cos(float64(i))
	}
	y := convolve(x, h)
	for _, i := range []int{0, 1, 2999, 4500, 19999} {
		var want float64
		for k := 0; k < len(h) && k <= i; k++ {
			want += h[k] * x[i-k]
		}
		if math.Abs(y[i]-want) > 1e-6 {
			t.Errorf("y[%d] = %g, want %g", i, y[i], want)
		}
	}
}

func TestADelayChangeRoomsEchoComesAtItsNewBulkDelayAfterTheChange(t *testing.T) {
	w := World{RT60: 300 * time.Millisecond, Direct: 10 * time.Millisecond, Bulk: 120 * time.Millisecond, BulkAfter: 40 * time.Millisecond, Level: -6, MoveAt: 500 * time.Millisecond, Seed: 3}
	far := make([]int16, 16000)
	far[12000] = 30000 // a click at 0.75 s, after the change
	echo := w.Render(far, nil).Echo
	first := slices.IndexFunc(echo[12000:], func(v int16) bool { return v != 0 })
	if want := 16 * 50; first != want {
		t.Errorf("the click's echo came %d samples after it, want %d (the new bulk delay and the direct path)", first, want)
	}
	if got := w.String(); got != "rt0.3-d10-b120-to-b40-at0.5s" {
		t.Errorf("named %q", got)
	}
}
