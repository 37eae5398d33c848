package resample

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio/audiotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func convert(t *testing.T, in []int16, inRate, outRate, ch int, chunk int) []int16 {
	t.Helper()
	r, err := New(inRate, outRate, ch, High)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []int16
	for len(in) > 0 {
		n := min(chunk*ch, len(in))
		if out, err = r.Append(out, in[:n]); err != nil {
			t.Fatal(err)
		}
		in = in[n:]
	}
	if out, err = r.Flush(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestToneKeepsFrequencyAndLevel(t *testing.T) {
	for _, tc := range []struct{ in, out int }{{48000, 16000}, {44100, 16000}, {16000, 48000}, {22050, 16000}} {
		in := audiotest.Tone(440, tc.in, time.Second)
		out := convert(t, in, tc.in, tc.out, 1, 480)
		if want := tc.out; abs(len(out)-want) > 2 {
			t.Errorf("%d->%d: %d samples out, want %d", tc.in, tc.out, len(out), want)
		}
		// Skip the filter's fade-in/out at the edges.
		mid := out[tc.out/10 : len(out)-tc.out/10]
		if f := audiotest.PeakFrequency(mid, tc.out, 400, 480, 1); f != 440 {
			t.Errorf("%d->%d: peak at %v Hz, want 440", tc.in, tc.out, f)
		}
		if a := audiotest.Goertzel(mid, 440, tc.out); a < 0.49 || a > 0.51 {
			t.Errorf("%d->%d: 440 Hz amplitude %.4f, want 0.5", tc.in, tc.out, a)
		}
	}
}

// A correct 48k->16k resampler keeps everything below the new Nyquist
// frequency (8 kHz) and removes everything above it. Dropping two samples
// of three instead would fold 12 kHz onto 4 kHz and 10 kHz onto 6 kHz at
// full level; the second half of the test shows that this check catches it.
func TestAntiAliasing(t *testing.T) {
	const inRate, outRate = 48000, 16000
	pass := func(freq float64) float64 {
		out := convert(t, audiotest.Tone(freq, inRate, time.Second), inRate, outRate, 1, 960)
		return audiotest.Goertzel(out[1600:len(out)-1600], freq, outRate)
	}
	// 3 kHz and 7 kHz are in the pass band: kept within 0.5 dB.
	for _, f := range []float64{3000, 7000} {
		if a := pass(f); audiotest.DB(a/0.5) < -0.5 {
			t.Errorf("%v Hz: level %.1f dB, want within 0.5 dB", f, audiotest.DB(a/0.5))
		}
	}
	// 10 kHz and 12 kHz are above 8 kHz: gone, with no alias at 6 or 4 kHz.
	for _, tc := range []struct{ freq, alias float64 }{{12000, 4000}, {10000, 6000}} {
		out := convert(t, audiotest.Tone(tc.freq, inRate, time.Second), inRate, outRate, 1, 960)
		// The tone starts and stops abruptly; those clicks have energy in
		// the pass band, so measure the steady middle part.
		mid := out[1600 : len(out)-1600]
		if db := audiotest.DB(audiotest.RMS(mid) / audiotest.RMS(audiotest.Tone(tc.freq, inRate, time.Second))); db > -80 {
			t.Errorf("%v Hz: output level %.1f dB relative to input, want below -80 dB", tc.freq, db)
		}
		if a := audiotest.Goertzel(out, tc.alias, outRate); audiotest.DB(a/0.5) > -80 {
			t.Errorf("%v Hz: alias at %v Hz at %.1f dB, want below -80 dB", tc.freq, tc.alias, audiotest.DB(a/0.5))
		}
		// The same check on plain decimation finds the alias at full level.
		in := audiotest.Tone(tc.freq, inRate, time.Second)
		dec := make([]int16, 0, len(in)/3)
		for i := 0; i < len(in); i += 3 {
			dec = append(dec, in[i])
		}
		if a := audiotest.Goertzel(dec, tc.alias, outRate); audiotest.DB(a/0.5) < -1 {
			t.Fatalf("decimation of %v Hz: alias only %.1f dB; the check would not catch sample dropping", tc.freq, audiotest.DB(a/0.5))
		}
	}
}

func TestChunkingDoesNotMatter(t *testing.T) {
	in := audiotest.Interleave(audiotest.Tone(440, 48000, 500*time.Millisecond), audiotest.Tone(1000, 48000, 500*time.Millisecond))
	a := convert(t, in, 48000, 16000, 2, 1)
	b := convert(t, in, 48000, 16000, 2, 4801)
	c := convert(t, in, 48000, 16000, 2, len(in))
	if len(a) != len(b) || len(a) != len(c) {
		t.Fatalf("lengths differ: %d %d %d", len(a), len(b), len(c))
	}
	for i := range a {
		if a[i] != b[i] || a[i] != c[i] {
			t.Fatalf("sample %d differs: %d %d %d", i, a[i], b[i], c[i])
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := New(0, 16000, 1, High); err == nil {
		t.Error("rate 0 accepted")
	}
	if _, err := New(48000, 16000, 0, High); err == nil {
		t.Error("0 channels accepted")
	}
	if _, err := New(48000, 16000, 1, Quality(99)); err == nil {
		t.Error("unknown quality accepted")
	}
	r, err := New(48000, 16000, 2, Medium)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(nil, []int16{1, 2, 3}); err == nil {
		t.Error("odd sample count for 2 channels accepted")
	}
	if r.Engine() == "" {
		t.Error("no engine name")
	}
	r.Close()
	r.Close()
	if _, _, err := r.Process([]int16{1, 2}, make([]int16, 2)); !errors.Is(err, ErrClosed) {
		t.Errorf("Process after Close: %v, want ErrClosed", err)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkDownsample48kStereo measures the resampling step alone for one
// minute of 48 kHz stereo (downmix is not included; see package audio).
func BenchmarkResample48kTo16kMono(b *testing.B) {
	in := audiotest.Tone(440, 48000, time.Second)
	r, err := New(48000, 16000, 1, High)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	out := make([]int16, 0, 16000)
	chunk := 960 // 20 ms
	b.ResetTimer()
	for b.Loop() {
		for s := 0; s < 60; s++ {
			for i := 0; i < len(in); i += chunk {
				out, _ = r.Append(out[:0], in[i:i+chunk])
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/60e9*100, "cpu-%-of-core")
}
