package echoroom

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// World is a room like the ones a speaker meets outside the project's own
// (issue 24), for offline measurement: a bulk delay the devices add without
// reporting it, a direct path through the air, early reflections and an
// exponentially decaying diffuse tail of RT60 0.2–0.8 s; a small
// loudspeaker that high-passes (and may clip, hard or soft) what it plays;
// microphone noise; and a path that may change mid-run (someone moves).
type World struct {
	// Rate is the sample rate (default 16000).
	Rate int
	// RT60 is the time the diffuse tail takes to decay by 60 dB.
	RT60 time.Duration
	// Direct is the air path from the speaker to the microphone (5–30 ms).
	Direct time.Duration
	// Bulk is what the devices add beyond what they report (40–300 ms).
	Bulk time.Duration
	// Level is the echo's level relative to what is played, in dB (the
	// energy of the impulse response).
	Level float64
	// DRR is the direct-to-reverberant ratio in dB (the direct path and
	// early reflections over the diffuse tail).
	DRR float64
	// HighPass is the loudspeaker's cut-off in Hz (2nd order; 0: none).
	HighPass float64
	// Clip, above 0, clips the loudspeaker at that fraction of full scale:
	// Hard cuts it off, else Clip·tanh(x/Clip).
	Clip float64
	Hard bool
	// Noise is the microphone's noise in dBFS (RMS; 0: none).
	Noise float64
	// MoveAt, above 0, is when the path changes: reflections and tail are
	// drawn anew and the direct path moves by up to ±3 ms (50 ms crossfade).
	// With BulkAfter, only the bulk delay changes then.
	MoveAt time.Duration
	// BulkAfter, above 0, is the bulk delay from MoveAt on (the output
	// device or its buffering changed); the room's response stays.
	BulkAfter time.Duration
	// Seed makes the room repeatable.
	Seed uint64
}

func (w World) rate() int {
	if w.Rate <= 0 {
		return 16000
	}
	return w.Rate
}

// String names the room for tables.
func (w World) String() string {
	s := fmt.Sprintf("rt%.1f-d%d-b%d", w.RT60.Seconds(), w.Direct.Milliseconds(), w.Bulk.Milliseconds())
	if w.Clip > 0 {
		kind := "soft"
		if w.Hard {
			kind = "hard"
		}
		s += fmt.Sprintf("-%s%.1f", kind, w.Clip)
	}
	switch {
	case w.MoveAt > 0 && w.BulkAfter > 0:
		s += fmt.Sprintf("-to-b%d-at%gs", w.BulkAfter.Milliseconds(), w.MoveAt.Seconds())
	case w.MoveAt > 0:
		s += fmt.Sprintf("-move%gs", w.MoveAt.Seconds())
	}
	return s
}

// Response returns the impulse response from the speaker's output to the
// microphone without the bulk delay, before (part 0) or after (part 1) the
// path changes.
func (w World) Response(part int) []float64 {
	rate := float64(w.rate())
	rng := rand.New(rand.NewPCG(w.Seed, 0x776f726c64+uint64(part)))
	direct := w.Direct.Seconds()
	if part > 0 {
		direct = max(0.002, direct+0.003*(2*rng.Float64()-1))
	}
	d := int(direct * rate)
	n := d + int(w.RT60.Seconds()*rate) + 1
	h := make([]float64, n)
	h[d] = 1
	for range 6 { // early reflections, 1–25 ms after the direct path
		i := d + int((0.001+0.024*rng.Float64())*rate)
		sign := 1.0
		if rng.IntN(2) == 0 {
			sign = -1
		}
		h[i] += sign * (0.2 + 0.4*rng.Float64())
	}
	var early float64
	for _, v := range h {
		early += v * v
	}
	tau := w.RT60.Seconds() / math.Log(1000) // amplitude falls 60 dB over RT60
	tail := make([]float64, n)
	var et float64
	for i := d + int(0.002*rate); i < n; i++ {
		t := float64(i-d) / rate
		tail[i] = rng.NormFloat64() * math.Exp(-t/tau)
		et += tail[i] * tail[i]
	}
	g := math.Sqrt(early * math.Pow(10, -w.DRR/10) / et)
	var e float64
	for i := range h {
		h[i] += g * tail[i]
		e += h[i] * h[i]
	}
	s := math.Pow(10, w.Level/20) / math.Sqrt(e)
	for i := range h {
		h[i] *= s
	}
	return h
}

// speaker is what the loudspeaker makes of x (full scale ±1): clipped,
// then high-passed.
func (w World) speaker(x []int16) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		s := float64(v) / 32768
		switch {
		case w.Clip <= 0:
		case w.Hard:
			s = max(-w.Clip, min(w.Clip, s))
		default:
			s = w.Clip * math.Tanh(s/w.Clip)
		}
		y[i] = s
	}
	if w.HighPass > 0 {
		highPass(y, w.HighPass, float64(w.rate()))
	}
	return y
}

// highPass filters x in place with a 2nd-order Butterworth high-pass.
func highPass(x []float64, fc, rate float64) {
	k := math.Tan(math.Pi * fc / rate)
	q := math.Sqrt2 / 2
	norm := 1 / (1 + k/q + k*k)
	b0, b1, b2 := norm, -2*norm, norm
	a1, a2 := 2*(k*k-1)*norm, (1-k/q+k*k)*norm
	var x1, x2, y1, y2 float64
	for i, v := range x {
		y := b0*v + b1*x1 + b2*x2 - a1*y1 - a2*y2
		x2, x1, y2, y1 = x1, v, y1, y
		x[i] = y
	}
}

// Render plays far through the room and adds near (from sample 0, may be
// shorter) and the microphone's noise, offline.
func (w World) Render(far, near []int16) Signals {
	rate := w.rate()
	spk := w.speaker(far)
	delayed := func(d time.Duration) []float64 {
		bulk := int(d.Seconds() * float64(rate))
		shifted := make([]float64, len(spk))
		if bulk < len(spk) {
			copy(shifted[bulk:], spk)
		}
		return shifted
	}
	echo := convolve(delayed(w.Bulk), w.Response(0))
	if w.MoveAt > 0 {
		var after []float64
		if w.BulkAfter > 0 {
			after = convolve(delayed(w.BulkAfter), w.Response(0))
		} else {
			after = convolve(delayed(w.Bulk), w.Response(1))
		}
		at, fade := int(w.MoveAt.Seconds()*float64(rate)), rate/20
		for i := range echo {
			a := min(1, max(0, float64(i-at)/float64(fade)))
			echo[i] = (1-a)*echo[i] + a*after[i]
		}
	}
	rng := rand.New(rand.NewPCG(w.Seed, 0x6d6963))
	na := 0.0
	if w.Noise < 0 {
		na = math.Pow(10, w.Noise/20)
	}
	n := len(far)
	out := Signals{Mic: make([]int16, n), Echo: make([]int16, n), Near: make([]int16, n), Noise: make([]int16, n)}
	for i := range n {
		nz := na * rng.NormFloat64()
		var ne float64
		if i < len(near) {
			ne = float64(near[i]) / 32768
		}
		out.Echo[i] = toS16(echo[i])
		out.Near[i] = toS16(ne)
		out.Noise[i] = toS16(nz)
		out.Mic[i] = toS16(echo[i] + ne + nz)
	}
	return out
}

// Kind is what a world room is in a set of rooms.
type Kind int

// The kinds of rooms in a set (issue 24's conditions).
const (
	Dry         Kind = iota // RT60 0.2–0.3 s
	Living                  // RT60 0.4–0.6 s
	Hall                    // RT60 0.8 s (no target; reported)
	HardClip                // RT60 0.3 s, hard clipping at 0.3
	SoftClip                // RT60 0.3 s, soft clipping at 0.3
	Moving                  // RT60 0.4 s, the path changes at 10 s
	DelayChange             // RT60 0.3 s, the bulk delay changes at 10 s (40–80 ms earlier or later)
)

var kindNames = [...]string{"rt60≤0.3", "rt60 0.4–0.6", "rt60 0.8", "hard clip 0.3", "soft clip 0.3", "path change", "delay change"}

func (k Kind) String() string { return kindNames[k] }

// WorldRoom is one room of a set, of its kind.
type WorldRoom struct {
	Kind Kind
	World
}

// WorldRooms returns a set of rooms drawn from seed: for each kind, n rooms
// (RT60s spread over the kind's range; direct path, bulk delay, level and
// DRR drawn). Sets with different seeds share no room: one tunes, another
// is held out. A DelayChange room's bulk delay moves at 10 s: in the first
// (as the output device changes) from 100–160 ms 60–80 ms earlier, in the
// second from 20–100 ms as much later.
func WorldRooms(seed uint64, n int) []WorldRoom {
	rng := rand.New(rand.NewPCG(seed, 0x726f6f6d73))
	var out []WorldRoom
	spread := func(lo, hi float64, i int) float64 {
		if n == 1 {
			return (lo + hi) / 2
		}
		return lo + (hi-lo)*float64(i)/float64(n-1)
	}
	for k := Dry; k <= DelayChange; k++ {
		for i := range n {
			var rt float64
			switch k {
			case Dry:
				rt = spread(0.2, 0.3, i)
			case Living:
				rt = spread(0.4, 0.6, i)
			case Hall:
				rt = 0.8
			case HardClip, SoftClip, DelayChange:
				rt = 0.3
			case Moving:
				rt = 0.4
			}
			w := World{
				RT60:     time.Duration(rt * float64(time.Second)),
				Direct:   time.Duration(5+rng.IntN(26)) * time.Millisecond,
				Bulk:     time.Duration(40+rng.IntN(261)) * time.Millisecond,
				Level:    -8 + 6*rng.Float64(),
				HighPass: 250,
				Noise:    -60,
				Seed:     rng.Uint64(),
			}
			// A longer RT60 is a larger, more reverberant room: less of the
			// sound comes directly.
			w.DRR = 4 - 10*math.Log10(rt/0.2) + 4*(rng.Float64()-0.5)
			switch k {
			case HardClip:
				w.Clip, w.Hard = 0.3, true
			case SoftClip:
				w.Clip = 0.3
			case Moving:
				w.MoveAt = 10 * time.Second
			case DelayChange:
				// Drawn after the others: the rooms of the other kinds
				// stay as they were before this kind was added.
				w.MoveAt = 10 * time.Second
				early := time.Duration(100+rng.IntN(61)) * time.Millisecond
				by := time.Duration(60+rng.IntN(21)) * time.Millisecond
				w.Bulk, w.BulkAfter = early, early-by
				if i%2 == 1 {
					w.Bulk, w.BulkAfter = early-by, early
				}
			}
			out = append(out, WorldRoom{Kind: k, World: w})
		}
	}
	return out
}
