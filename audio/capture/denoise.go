package capture

import (
	"fmt"
	"math"
)

// Denoise is the noise-suppressing stage: speexdsp's preprocessor, which
// learns the noise's spectrum while nobody speaks and takes up to Level dB
// off it. Digital silence (a microphone muted at the device, a suspended
// source) goes past it untouched once its buffers are flushed: its output
// would be the same, and its noise estimate keeps the room's.
type Denoise struct {
	pre   *speexPre
	frame int
	runs  int // frames handed to speexdsp
	zeros int // digital silence in a row, in frames
}

// flushFrames of digital silence leave only zeros in speexdsp's overlap
// buffers; after them its output for digital silence is digital silence.
const flushFrames = 2

// Bounds of Denoise's level, in dB of attenuation.
const (
	MinDenoiseLevel = -60
	MaxDenoiseLevel = -1
)

// DefaultDenoiseLevel is the most the suppressor takes off noise by default.
const DefaultDenoiseLevel = -20

// NewDenoise returns a suppressor for mono samples at rate that takes at
// most level dB (negative) off the noise.
func NewDenoise(rate, level int) (*Denoise, error) {
	if rate%100 != 0 {
		return nil, fmt.Errorf("noise suppression: rate %d Hz is not a whole number of samples per 10 ms", rate)
	}
	if level < MinDenoiseLevel || level > MaxDenoiseLevel {
		return nil, fmt.Errorf("noise suppression: level %d dB is outside %d…%d dB", level, MinDenoiseLevel, MaxDenoiseLevel)
	}
	pre, err := newSpeexPre(FrameSize(rate), rate)
	if err != nil {
		return nil, fmt.Errorf("noise suppression: %w", err)
	}
	pre.set(ppDenoise, 1)
	pre.set(ppNoiseSuppress, level)
	return &Denoise{pre: pre, frame: FrameSize(rate)}, nil
}

// Name implements Stage.
func (d *Denoise) Name() string { return "denoise" }

// Process implements Stage.
func (d *Denoise) Process(f *Frame) {
	if len(f.PCM) != d.frame {
		return
	}
	if d.zeros = d.zeros + 1; !allZero(f.PCM) {
		d.zeros = 0
	}
	if d.zeros > flushFrames {
		return // a call into C for nothing, and a wake-up of the runtime's monitor
	}
	d.pre.run(f.PCM)
	d.runs++
}

func allZero(p []int16) bool {
	for _, v := range p {
		if v != 0 {
			return false
		}
	}
	return true
}

// Close implements Stage.
func (d *Denoise) Close() error {
	d.pre.close()
	return nil
}

// Gain is a fixed gain, with samples that would overflow held at full
// scale.
type Gain struct {
	g float64
}

// MaxGain bounds Gain's setting, in dB either way.
const MaxGain = 30.0

// NewGain returns a stage that changes the level by db decibels.
func NewGain(db float64) (*Gain, error) {
	if math.IsNaN(db) || db < -MaxGain || db > MaxGain {
		return nil, fmt.Errorf("gain %g dB is outside ±%g dB", db, MaxGain)
	}
	return &Gain{g: math.Pow(10, db/20)}, nil
}

// Name implements Stage.
func (g *Gain) Name() string { return "gain" }

// Process implements Stage.
func (g *Gain) Process(f *Frame) {
	for i, v := range f.PCM {
		x := math.Round(float64(v) * g.g)
		f.PCM[i] = int16(max(-32768, min(32767, x)))
	}
}

// Close implements Stage.
func (g *Gain) Close() error { return nil }
