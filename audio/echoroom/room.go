// Package echoroom is a simulated room for tests, the demo and benchmarks:
// what the host plays comes back into its microphone through a room model
// (a delay, a decaying impulse response, a gain, optional soft clipping of
// the loudspeaker, a little noise), mixed with near-end speech that the
// caller scripts.
//
// Render runs the model offline over whole signals (for benchmarks, where
// the echo alone and the near speech alone are known). Live is the same
// room as an audio.Source (the microphone) and audio.Sink (the speaker)
// that take real time, for the daemon (audio.backend: echo_room) and
// end-to-end tests.
package echoroom

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Room describes the acoustic path from the speaker to the microphone.
type Room struct {
	// Rate is the sample rate (default 16000).
	Rate int
	// Delay is the time from the speaker to the microphone's first sound,
	// including what the devices add beyond what they report (20–250 ms is
	// the range the canceller is tested on).
	Delay time.Duration
	// Gain is the level of the echo relative to what is played, in dB (the
	// energy of the impulse response); -20…0 dB is a speaker next to its
	// microphone.
	Gain float64
	// Reverb is the time the tail of the impulse response takes to decay by
	// 60 dB (RT60, default 150 ms); the response is that long.
	Reverb time.Duration
	// Clip, when above 0, soft-clips the loudspeaker: its output is
	// Clip·tanh(x/Clip) for a sample x in full-scale units (0.3 is a small
	// speaker driven hard). 0 is a linear speaker.
	Clip float64
	// Noise is the level of the room's noise at the microphone in dBFS
	// (RMS), e.g. -60; 0 or below -120 means none.
	Noise float64
	// Seed makes the impulse response and the noise repeatable.
	Seed uint64
}

// Bounds of the room's settings, checked by Validate.
const (
	MaxDelay  = 500 * time.Millisecond
	MaxReverb = time.Second
	MinGain   = -60.0
	MaxGain   = 6.0
)

func (r Room) withDefaults() Room {
	if r.Rate <= 0 {
		r.Rate = 16000
	}
	if r.Reverb <= 0 {
		r.Reverb = 150 * time.Millisecond
	}
	return r
}

// Validate reports a setting outside what the model supports.
func (r Room) Validate() error {
	switch {
	case r.Delay < 0 || r.Delay > MaxDelay:
		return fmt.Errorf("delay %s is outside 0…%s", r.Delay, MaxDelay)
	case r.Reverb < 0 || r.Reverb > MaxReverb:
		return fmt.Errorf("reverb %s is outside 0…%s", r.Reverb, MaxReverb)
	case r.Gain < MinGain || r.Gain > MaxGain || math.IsNaN(r.Gain):
		return fmt.Errorf("gain %g dB is outside %g…%g dB", r.Gain, MinGain, MaxGain)
	case r.Clip < 0 || r.Clip > 1 || math.IsNaN(r.Clip):
		return fmt.Errorf("clip %g is outside 0…1 (a fraction of full scale; 0 is off)", r.Clip)
	case r.Noise > 0 || math.IsNaN(r.Noise):
		return fmt.Errorf("noise %g dBFS must be 0 (none) or below", r.Noise)
	}
	return nil
}

// Response returns the room's impulse response (without the delay): a
// direct path, a few early reflections and an exponentially decaying
// noise tail, scaled so that its energy is Gain dB.
func (r Room) Response() []float64 {
	r = r.withDefaults()
	n := max(1, int(r.Reverb.Seconds()*float64(r.Rate)))
	rng := rand.New(rand.NewPCG(r.Seed, 0x6563686f))
	tau := r.Reverb.Seconds() / math.Log(1000) // amplitude falls 60 dB over Reverb
	h := make([]float64, n)
	h[0] = 1
	for i := 1; i < n; i++ {
		t := float64(i) / float64(r.Rate)
		h[i] = 0.3 * rng.NormFloat64() * math.Exp(-t/tau)
	}
	for _, ms := range []float64{3.1, 5.7, 8.9, 13.3} { // early reflections
		if i := int(ms * float64(r.Rate) / 1000); i < n {
			h[i] += 0.5 * (rng.Float64() - 0.5)
		}
	}
	var e float64
	for _, v := range h {
		e += v * v
	}
	g := math.Pow(10, r.Gain/20) / math.Sqrt(e)
	for i := range h {
		h[i] *= g
	}
	return h
}

// speaker applies the loudspeaker's soft clipping to x (full scale ±1).
func (r Room) speaker(x float64) float64 {
	if r.Clip <= 0 {
		return x
	}
	return r.Clip * math.Tanh(x/r.Clip)
}

// noiseAmp is the standard deviation of the room noise in full-scale units.
func (r Room) noiseAmp() float64 {
	if r.Noise == 0 || r.Noise < -120 {
		return 0
	}
	return math.Pow(10, r.Noise/20)
}

// Signals are what Render returns, all as long as the far-end input.
type Signals struct {
	Mic   []int16 // what the microphone hears: echo + near + noise
	Echo  []int16 // the echo alone
	Near  []int16 // the near-end speech alone, as it reaches the microphone
	Noise []int16 // the noise alone
}

// Render plays far through the room and mixes near (may be shorter or nil,
// added from sample 0) into the microphone, offline.
func (r Room) Render(far, near []int16) Signals {
	r = r.withDefaults()
	h := r.Response()
	d := int(r.Delay.Seconds() * float64(r.Rate))
	n := len(far)
	spk := make([]float64, n)
	for i, v := range far {
		spk[i] = r.speaker(float64(v) / 32768)
	}
	out := Signals{Mic: make([]int16, n), Echo: make([]int16, n), Near: make([]int16, n), Noise: make([]int16, n)}
	rng := rand.New(rand.NewPCG(r.Seed, 0x6e6f697365))
	na := r.noiseAmp()
	for i := range n {
		var e float64
		for k := 0; k < len(h) && i-d-k >= 0; k++ {
			e += h[k] * spk[i-d-k]
		}
		var nz, ne float64
		if na > 0 {
			nz = na * rng.NormFloat64()
		}
		if i < len(near) {
			ne = float64(near[i]) / 32768
		}
		out.Echo[i] = toS16(e)
		out.Near[i] = toS16(ne)
		out.Noise[i] = toS16(nz)
		out.Mic[i] = toS16(e + ne + nz)
	}
	return out
}

func toS16(x float64) int16 {
	v := math.Round(x * 32768)
	switch {
	case v > 32767:
		return 32767
	case v < -32768:
		return -32768
	}
	return int16(v)
}
