package capture

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A microphone that delivers digital silence (muted at the device, a
// source suspended, the benchmark's silent room) costs the suppressor
// nothing: once its buffers hold only zeros its output is zeros too, so
// the frames are not handed to speexdsp (each call into C also wakes the
// Go runtime's monitor thread, which is half the daemon's cost in such a
// room).
func TestDigitalSilenceCostsTheSuppressorNothing(t *testing.T) {
	d, err := NewDenoise(rate, DefaultDenoiseLevel)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	f := Frame{PCM: make([]int16, frameLen)}
	for range 100 { // 1 s of a room's noise
		for i := range f.PCM {
			f.PCM[i] = int16(300 * rng.NormFloat64())
		}
		d.Process(&f)
	}
	runs := d.runs
	for k := range 200 { // 2 s of digital silence
		clear(f.PCM)
		d.Process(&f)
		for i, v := range f.PCM {
			if v != 0 && k >= 2 { // the first two carry the noise's tail
				t.Fatalf("digital silence came out as %d at sample %d of frame %d", v, i, k)
			}
		}
	}
	if n := d.runs - runs; n > 2 {
		t.Errorf("2 s of digital silence went through speexdsp in %d frames, want at most 2 (until its buffers hold only zeros)", n)
	}
}

// Sound after digital silence carries nothing of the sound before it:
// the frames the suppressor still takes in after the sound stopped flush
// its overlap buffers.
func TestSoundAfterDigitalSilenceCarriesNothingFromBeforeIt(t *testing.T) {
	d, err := NewDenoise(rate, DefaultDenoiseLevel)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f := Frame{PCM: make([]int16, frameLen)}
	n := 0
	for range 100 { // 1 s of a loud tone
		for i := range f.PCM {
			f.PCM[i] = int16(20000 * math.Sin(2*math.Pi*440*float64(n)/rate))
			n++
		}
		d.Process(&f)
	}
	for range 50 {
		clear(f.PCM)
		d.Process(&f)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for k := range 3 { // a quiet hiss after it
		var in, out float64
		for i := range f.PCM {
			f.PCM[i] = int16(30 * rng.NormFloat64())
			in += float64(f.PCM[i]) * float64(f.PCM[i])
		}
		d.Process(&f)
		for _, v := range f.PCM {
			out += float64(v) * float64(v)
		}
		if out > 4*in {
			t.Errorf("frame %d after the silence: %.0f dB over its input (the tone from before it)", k, 10*math.Log10(out/in))
		}
	}
}

// What Denoise skips is what speexdsp would have turned into digital
// silence anyway: after flushFrames of zeros its output for zeros is zeros,
// at every level. (The test above sees only what Denoise passes, so it
// would not notice a flushFrames too small.)
func TestSpeexdspTurnsDigitalSilenceIntoDigitalSilenceOnceFlushed(t *testing.T) {
	for _, level := range []int{MinDenoiseLevel, DefaultDenoiseLevel, MaxDenoiseLevel} {
		pre, err := newSpeexPre(frameLen, rate)
		if err != nil {
			t.Fatal(err)
		}
		pre.set(ppDenoise, 1)
		pre.set(ppNoiseSuppress, level)
		rng := rand.New(rand.NewPCG(3, 3))
		f := make([]int16, frameLen)
		for range 100 { // 1 s of loud noise
			for i := range f {
				f[i] = int16(8000 * rng.NormFloat64())
			}
			pre.run(f)
		}
		for k := range 50 {
			clear(f)
			pre.run(f)
			for i, v := range f {
				if v != 0 && k >= flushFrames {
					t.Fatalf("level %d dB: frame %d of digital silence came out of speexdsp as %d at sample %d", level, k, v, i)
				}
			}
		}
		pre.close()
	}
}
