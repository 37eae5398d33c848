package capture

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/echoroom"
)

// The scenes the tests and benchmarks measure: the speaker says a weather
// report (far end, about 20 s); in double talk a second voice speaks over it
// from 8 s on (near end, at -6 dB).

const (
	rate      = 16000
	frameLen  = 160
	nearStart = 8 * rate
	settle    = 2 * rate // ERLE is measured after 2 s
)

const farText = "The weather today is mostly sunny with a light breeze from the west. " +
	"Temperatures will reach twenty three degrees in the afternoon, and the evening stays mild. " +
	"Tomorrow brings clouds and a chance of rain after midday, so take an umbrella if you go out. " +
	"The weekend looks warmer again, with long bright spells and hardly any wind at all."

const nearText = "Hello there, could you please stop for a moment and tell me what time it is in Tokyo right now."

var speech struct {
	once      sync.Once
	far, near []int16
}

// voices returns the far-end report and the near-end sentence (espeak-ng).
func voices(t testing.TB) (far, near []int16) {
	speech.once.Do(func() {
		speech.far = audiotest.Speech(t, farText).Samples
		n := audiotest.SpeechVoice(t, "en-gb+f3", nearText)
		speech.near = n.Samples[:n.Words]
	})
	if speech.far == nil {
		t.Fatal("no speech (an earlier test failed to make it)")
	}
	return speech.far, speech.near
}

// linearRoom and clippedRoom are the rooms the targets are set on.
func linearRoom(delay time.Duration) echoroom.Room {
	return echoroom.Room{Delay: delay, Gain: -6, Reverb: 150 * time.Millisecond, Noise: -70, Seed: 1}
}

func clippedRoom(delay time.Duration, clip float64) echoroom.Room {
	r := linearRoom(delay)
	r.Clip = clip
	return r
}

// doubleTalk is the near sentence placed at nearStart, at -6 dB, in a
// signal as long as far.
func doubleTalk(far, near []int16) []int16 {
	out := make([]int16, len(far))
	for i, v := range near {
		if nearStart+i < len(out) {
			out[nearStart+i] = v / 2
		}
	}
	return out
}

// cancel runs a fresh canceller over mic with far as the reference as the
// devices align it (no delay beyond the room's).
func cancel(t testing.TB, mic, far []int16, o EchoOptions) []int16 {
	e, err := NewEcho(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := append([]int16(nil), mic...)
	ref := make([]int16, frameLen)
	for i := 0; i+frameLen <= len(out); i += frameLen {
		clear(ref)
		if i < len(far) {
			copy(ref, far[i:min(len(far), i+frameLen)])
		}
		e.Cancel(out[i:i+frameLen], ref)
	}
	return out
}

// run passes x through one stage, frame by frame.
func run(s Stage, x []int16) []int16 {
	out := append([]int16(nil), x...)
	f := Frame{}
	for i := 0; i+frameLen <= len(out); i += frameLen {
		f.PCM = out[i : i+frameLen]
		s.Process(&f)
	}
	return out
}

// fanNoise is a fan: broadband noise tilted to the low end, a blade-pass
// hum at 120 Hz with harmonics, and a slow wobble, at rms (full scale).
func fanNoise(n int, rms float64, seed uint64) []int16 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n)
	var lp1, lp2, e float64
	for i := range x {
		w := rng.NormFloat64()
		lp1 += 0.15 * (w - lp1)
		lp2 += 0.02 * (w - lp2)
		t := float64(i) / rate
		hum := 0.0
		for h := 1; h <= 4; h++ {
			hum += math.Sin(2*math.Pi*120*float64(h)*t+float64(h)) / float64(h)
		}
		x[i] = (lp1 + 2*lp2 + 0.3*w + 0.15*hum) * (1 + 0.1*math.Sin(2*math.Pi*0.7*t))
		e += x[i] * x[i]
	}
	g := rms / math.Sqrt(e/float64(n))
	out := make([]int16, n)
	for i, v := range x {
		out[i] = int16(max(-32768, min(32767, math.Round(v*g*32768))))
	}
	return out
}

// mix adds b to a, saturating.
func mix(a, b []int16) []int16 {
	out := make([]int16, len(a))
	for i := range a {
		v := int32(a[i])
		if i < len(b) {
			v += int32(b[i])
		}
		out[i] = int16(max(-32768, min(32767, v)))
	}
	return out
}

// shiftBack undoes a stage's delay of lag samples (the preprocessor holds
// one frame back).
func shiftBack(x []int16, lag int) []int16 {
	if lag <= 0 {
		return x
	}
	return append(append([]int16(nil), x[lag:]...), make([]int16, lag)...)
}
