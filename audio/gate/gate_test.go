package gate_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/gate"
	"github.com/agenthost/agenthost/audio/vad"
)

const rate = 16000

func samples(d time.Duration) int { return int(d.Seconds() * rate) }

func clamp(v float64) int16 { return int16(max(-32768, min(32767, math.Round(v)))) }

// white is white noise at dbfs (RMS).
func white(rng *rand.Rand, n int, dbfs float64) []int16 {
	a := math.Pow(10, dbfs/20) * 32768
	out := make([]int16, n)
	for i := range out {
		out[i] = clamp(a * rng.NormFloat64())
	}
	return out
}

// fan is brown noise, low-passed, at dbfs (RMS): a fan's rumble.
func fan(rng *rand.Rand, n int, dbfs float64) []int16 {
	v := make([]float64, n)
	var b, y, sum float64
	for i := range v {
		b = 0.995*b + rng.NormFloat64()
		y += 0.3 * (b - y)
		v[i] = y
		sum += y * y
	}
	g := math.Pow(10, dbfs/20) * 32768 / math.Sqrt(sum/float64(n))
	out := make([]int16, n)
	for i, x := range v {
		out[i] = clamp(g * x)
	}
	return out
}

func mix(a, b []int16, at int) {
	for i, v := range b {
		a[at+i] = clamp(float64(a[at+i]) + float64(v))
	}
}

type chunk struct {
	pos int64
	pcm []int16
}

// run pushes src through g in frames of frame samples from pos 0 and
// returns what was handed on.
func run(t *testing.T, g *gate.Gate, src []int16, frame int) []chunk {
	t.Helper()
	var out []chunk
	for i := 0; i < len(src); i += frame {
		f := src[i:min(i+frame, len(src))]
		g.Push(int64(i), f, func(pos int64, pcm []int16) { out = append(out, chunk{pos, append([]int16(nil), pcm...)}) })
	}
	return out
}

// exact fails unless every chunk is src's audio at its position.
func exact(t *testing.T, out []chunk, src []int16) {
	t.Helper()
	for _, c := range out {
		for i, v := range c.pcm {
			if src[c.pos+int64(i)] != v {
				t.Fatalf("sample %d handed on as %d, was %d", c.pos+int64(i), v, src[c.pos+int64(i)])
			}
		}
	}
}

// after is how many samples at or after pos were handed on.
func after(out []chunk, pos int64) int {
	n := 0
	for _, c := range out {
		for i := range c.pcm {
			if c.pos+int64(i) >= pos {
				n++
			}
		}
	}
	return n
}

// voicedEnd is the end of the last 10 ms louder than -45 dBFS.
func voicedEnd(words []int16) int {
	n := len(words) / 160 * 160
	for n > 0 && vad.DBFS(words[n-160:n]) < -45 {
		n -= 160
	}
	return n
}

func newGate(t *testing.T) *gate.Gate {
	g, err := gate.New(gate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAQuietRoomHandsTheDetectorNothing: once the gate has heard the room
// (a few seconds), a minute of digital silence, of a quiet room's hiss
// (-65 dBFS) and of a fan's rumble (-40 dBFS) each hands the detector
// nothing.
func TestAQuietRoomHandsTheDetectorNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, room := range []struct {
		name string
		pcm  []int16
	}{
		{"silence", make([]int16, samples(time.Minute))},
		{"hiss at -65 dBFS", white(rng, samples(time.Minute), -65)},
		{"fan at -40 dBFS", fan(rng, samples(time.Minute), -40)},
	} {
		g := newGate(t)
		out := run(t, g, room.pcm, samples(60*time.Millisecond))
		exact(t, out, room.pcm)
		if n := after(out, int64(samples(10*time.Second))); n != 0 || g.Open() {
			t.Errorf("%s: %d samples handed on after the first 10 s (floor %.1f dB), open: %v", room.name, n, g.Floor(), g.Open())
		}
	}
}

// TestTheFirstSoundOpensTheGateWithItsContext: speech after 30 s of a
// quiet room (and over a fan) opens the gate; the detector gets PreRoll
// of audio from before the frame that opened it, starting on a multiple
// of Align, then every sample up to Hang after the speech, exactly and
// without a gap; then the gate closes.
func TestTheFirstSoundOpensTheGateWithItsContext(t *testing.T) {
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	rng := rand.New(rand.NewPCG(3, 4))
	for _, room := range []struct {
		name string
		pcm  []int16
	}{
		{"hiss at -65 dBFS", white(rng, samples(40*time.Second), -65)},
		{"fan at -40 dBFS", fan(rng, samples(40*time.Second), -40)},
	} {
		src := room.pcm
		at := samples(30 * time.Second)
		mix(src, words, at)
		g := newGate(t)
		out := run(t, g, src, samples(60*time.Millisecond))
		exact(t, out, src)
		var late []chunk
		for _, c := range out {
			if c.pos >= int64(samples(10*time.Second)) {
				late = append(late, c)
			}
		}
		if len(late) == 0 {
			t.Fatalf("%s: the speech did not open the gate", room.name)
		}
		first, next := late[0].pos, late[0].pos
		for _, c := range late {
			if c.pos != next {
				t.Fatalf("%s: a gap in what was handed on at %d (next %d)", room.name, c.pos, next)
			}
			next += int64(len(c.pcm))
		}
		if first%1280 != 0 || first > int64(at-samples(2200*time.Millisecond)) || first < int64(at-samples(2600*time.Millisecond)) {
			t.Errorf("%s: the hand-on starts at %d, want a multiple of 1280 from 2.2 s (%d) to 2.6 s before the speech at %d", room.name, first, at-samples(2200*time.Millisecond), at)
		}
		end := int64(at + voicedEnd(words))
		if next < end+int64(samples(2200*time.Millisecond)) || next > end+int64(samples(2500*time.Millisecond)) || g.Open() {
			t.Errorf("%s: handed on up to %d, want 2.2…2.5 s after the speech's end at %d; open at the end: %v", room.name, next, end, g.Open())
		}
		t.Logf("%s: opened %d times; handed on %d…%d for speech at %d…%d", room.name, g.Opened, first, next, at, end)
	}
}

// TestAGapHandsOnNothingFromBeforeIt: a position that does not follow on
// (the microphone was muted, or opened again) opens the gate, and nothing
// of the audio from before the gap is ever handed on.
func TestAGapHandsOnNothingFromBeforeIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := newGate(t)
	before := white(rng, samples(3*time.Second), -20)
	run(t, g, before, 960)
	var out []chunk
	emit := func(pos int64, pcm []int16) { out = append(out, chunk{pos, pcm}) }
	const resume = 100 * rate
	g.Push(resume, make([]int16, 960), emit)
	if !g.Open() || len(out) != 1 || out[0].pos != resume || len(out[0].pcm) != 960 {
		t.Fatalf("after the gap: open %v, handed on %v", g.Open(), out)
	}
	// And backwards.
	out = nil
	g.Push(0, make([]int16, 960), emit)
	if len(out) != 1 || out[0].pos != 0 || len(out[0].pcm) != 960 {
		t.Fatalf("after a gap backwards: handed on %v", out)
	}
}

// TestALoudSteadyRoomKeepsTheGateOpen: in doubt, open: a room louder than
// MaxFloor (steady noise at -20 dBFS) is never gated.
func TestALoudSteadyRoomKeepsTheGateOpen(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	src := white(rng, samples(30*time.Second), -20)
	g := newGate(t)
	out := run(t, g, src, 960)
	if n := after(out, 0); n != len(src) || g.Opened != 1 {
		t.Fatalf("handed on %d of %d samples, opened %d times", n, len(src), g.Opened)
	}
}

// TestReplayHandsOnThePreRollAgain: a new detector (Replay) gets the
// pre-roll with the next frame even while the gate is open.
func TestReplayHandsOnThePreRollAgain(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src := white(rng, samples(10*time.Second), -20)
	g := newGate(t)
	run(t, g, src[:samples(5*time.Second)], 960)
	g.Replay()
	var out []chunk
	g.Push(int64(samples(5*time.Second)), src[samples(5*time.Second):samples(5*time.Second)+960], func(pos int64, pcm []int16) { out = append(out, chunk{pos, pcm}) })
	exact(t, out, src)
	if len(out) != 1 || out[0].pos%1280 != 0 || len(out[0].pcm) < samples(2200*time.Millisecond)+960 {
		t.Fatalf("handed on %d chunks, the first at %d with %d samples", len(out), out[0].pos, len(out[0].pcm))
	}
}

// TestTheHandOnKeepsTheStreamsSteps: a stream that begins at 16000 (as
// the capture's does) is handed on from a multiple of Align after 16000,
// where a detector fed the continuous stream takes its steps.
func TestTheHandOnKeepsTheStreamsSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	src := white(rng, samples(20*time.Second), -65)
	mix(src, white(rng, samples(time.Second), -20), samples(15*time.Second))
	g := newGate(t)
	var out []chunk
	for i := 0; i < len(src); i += 960 {
		g.Push(16000+int64(i), src[i:min(i+960, len(src))], func(pos int64, pcm []int16) { out = append(out, chunk{pos, pcm}) })
	}
	var late []int64
	for _, c := range out {
		if c.pos > 16000+int64(samples(10*time.Second)) {
			late = append(late, c.pos)
		}
	}
	if len(late) == 0 || (late[0]-16000)%1280 != 0 {
		t.Fatalf("handed on from %v", late)
	}
}
