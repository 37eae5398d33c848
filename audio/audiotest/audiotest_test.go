package audiotest

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestGoertzel(t *testing.T) {
	s := Tone(1000, 16000, time.Second)
	if a := Goertzel(s, 1000, 16000); math.Abs(a-0.5) > 0.001 {
		t.Errorf("amplitude at 1 kHz %.4f, want 0.5", a)
	}
	if a := Goertzel(s, 1500, 16000); a > 1e-4 {
		t.Errorf("amplitude at 1.5 kHz %.6f, want ~0", a)
	}
	mix := make([]int16, len(s))
	low := ToneAmp(300, 16000, time.Second, 0.1)
	for i := range mix {
		mix[i] = s[i] + low[i]
	}
	if a := Goertzel(mix, 300, 16000); math.Abs(a-0.1) > 0.001 {
		t.Errorf("300 Hz in a mix: %.4f, want 0.1", a)
	}
	if f := PeakFrequency(mix, 16000, 200, 2000, 1); f != 1000 {
		t.Errorf("peak %v", f)
	}
}

func TestCorrelate(t *testing.T) {
	a := Tone(440, 16000, 100*time.Millisecond)
	b := append(make([]int16, 7), a...) // a delayed by 7 samples
	c, lag := Correlate(a, b, 20)
	if c < 0.999 || lag != 7 {
		t.Errorf("correlation %v at lag %d, want 1 at 7", c, lag)
	}
	neg := make([]int16, len(a))
	for i := range a {
		neg[i] = -a[i]
	}
	if c, _ := Correlate(a, neg, 0); c > -0.999 {
		t.Errorf("inverted: %v", c)
	}
}

func TestRawRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.s16")
	in := []int16{0, 1, -1, 32767, -32768}
	if err := WriteRaw(p, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadRaw(p)
	if err != nil || len(out) != len(in) {
		t.Fatal(out, err)
	}
	for i := range in {
		if in[i] != out[i] {
			t.Fatalf("%v != %v", out, in)
		}
	}
}

// The headless configuration works with ALSA's own tools: arecord opens
// the default device at 48 kHz stereo (the plug converts), and aplay's
// samples land in the playback file.
func TestHeadlessConfigWithALSATools(t *testing.T) {
	for _, tool := range []string{"arecord", "aplay"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install alsa-utils)", tool)
		}
	}
	dir := t.TempDir()
	capt, play := filepath.Join(dir, "cap.s16"), filepath.Join(dir, "play.s16")
	tone := Tone(440, 16000, time.Second)
	if err := WriteRaw(capt, append(tone, Silence(16000, time.Second)...)); err != nil {
		t.Fatal(err)
	}
	conf, err := WriteHeadlessALSAConfig(dir, capt, play)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "ALSA_CONFIG_PATH="+conf)
	rec := filepath.Join(dir, "rec48.s16")
	cmd := exec.Command("arecord", "-q", "-D", "default", "-f", "S16_LE", "-r", "48000", "-c", "2", "-s", "24000", "-t", "raw", rec)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("arecord: %v\n%s", err, out)
	}
	got, err := ReadRaw(rec)
	if err != nil {
		t.Fatal(err)
	}
	left := make([]int16, 0, len(got)/2)
	for i := 0; i+1 < len(got); i += 2 {
		left = append(left, got[i])
	}
	if len(left) != 24000 {
		t.Fatalf("arecord got %d frames, want 24000", len(left))
	}
	if f := PeakFrequency(left[2400:], 48000, 400, 480, 1); f != 440 {
		t.Errorf("recorded %v Hz through the plug, want 440", f)
	}

	cmd = exec.Command("aplay", "-q", "-D", "default", "-f", "S16_LE", "-r", "16000", "-c", "1", "-t", "raw", capt)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aplay: %v\n%s", err, out)
	}
	played, err := ReadRaw(play)
	if err != nil || len(played) < len(tone) {
		t.Fatalf("played %d samples, %v", len(played), err)
	}
	for i := range tone {
		if played[i] != tone[i] {
			t.Fatalf("played sample %d differs", i)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Music is the same for the same seed, to the last bit: sox dithers a
// 16-bit output from a clock-seeded generator unless told not to (-D).
func TestMusicIsTheSameForTheSameSeed(t *testing.T) {
	a, b := Music(t, 7, 2*time.Second), Music(t, 7, 2*time.Second)
	if !slices.Equal(a, b) {
		diff := 0
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				diff++
			}
		}
		t.Fatalf("two renders of seed 7 differ in %d of %d samples", diff, len(a))
	}
}
