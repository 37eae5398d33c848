package wakewordtest

import (
	"crypto/sha256"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/internal/longtest"
)

// Every other synthesizer's voice says the phrase, slower at 120 words a
// minute than at 200 by about their ratio, and higher at pitch 80 than 30.
// By default four voices spread over the list; AGENTHOST_LONG_TESTS=1: every one.
func TestOtherVoicesSayThePhraseAtTheSpeedAndPitchAsked(t *testing.T) {
	dir := t.TempDir()
	for _, v := range longtest.Pick(OtherVoices, 4) {
		t.Run(v, func(t *testing.T) {
			clip := func(wpm, pitch int, text string) Clip {
				c := Clip{Voice: v, WPM: wpm, Pitch: pitch, Text: text}
				if err := say(dir, &c); err != nil {
					t.Fatal(err)
				}
				return c
			}
			slow, fast := clip(120, 50, "hey jarvis"), clip(200, 50, "hey jarvis")
			ratio := float64(slow.End-slow.Onset) / float64(fast.End-fast.Onset)
			if math.Abs(ratio-200.0/120) > 0.25 {
				t.Errorf("voiced %d samples at 120 wpm, %d at 200: ratio %.2f, want about %.2f", slow.End-slow.Onset, fast.End-fast.Onset, ratio, 200.0/120)
			}
			const longer = "hey jarvis, what is the weather like in the morning"
			low, high := pitchOf(clip(160, 30, longer)), pitchOf(clip(160, 80, longer))
			if want := math.Pow(2, 500.0/1200); high/low < want*0.85 || high/low > want*1.15 {
				t.Errorf("pitch %.0f Hz at 30, %.0f Hz at 80: ratio %.2f, want about %.2f", low, high, high/low, want)
			}
		})
	}
}

// pitchOf is the median pitch of c's voiced 40 ms frames (autocorrelation,
// 60–400 Hz; the shortest lag whose peak comes within 15% of the highest,
// so that a period's multiples are not taken for it).
func pitchOf(c Clip) float64 {
	var f0s []float64
	p := c.PCM[c.Onset:c.End]
	lo, hi := 16000/400, 16000/60
	r := make([]float64, hi+2)
	for i := 0; i+640 <= len(p); i += 320 {
		w := p[i : i+640]
		var e, best float64
		for _, v := range w {
			e += float64(v) * float64(v)
		}
		for l := lo - 1; l <= hi+1; l++ {
			r[l] = 0
			for k := 0; k+l < len(w); k++ {
				r[l] += float64(w[k]) * float64(w[k+l])
			}
			best = max(best, r[l])
		}
		if best <= 0.5*e {
			continue
		}
		for l := lo; l <= hi; l++ {
			if r[l] >= 0.85*best && r[l] >= r[l-1] && r[l] >= r[l+1] {
				f0s = append(f0s, 16000/float64(l))
				break
			}
		}
	}
	if len(f0s) == 0 {
		return 0
	}
	sort.Float64s(f0s)
	return f0s[len(f0s)/2]
}

// Every other voice sounds its own: flite and RHVoice speak in their
// default voice, and exit 0, when the voice asked for is not there.
func TestEveryOtherVoiceSoundsItsOwn(t *testing.T) {
	dir := t.TempDir()
	seen := map[[32]byte]string{}
	for _, v := range OtherVoices {
		c := Clip{Voice: v, WPM: 160, Pitch: 50, Text: "hey jarvis"}
		if err := say(dir, &c); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(audiotest.SamplesToBytes(c.PCM))
		if other, ok := seen[h]; ok {
			t.Errorf("%s says the phrase exactly as %s: is the voice installed, and its name right?", v, other)
		}
		seen[h] = v
	}
}

// The wake set's music sounds are the same on every render, to the last
// bit (sox seeds its dither and noise from the clock unless -R).
func TestTheSetsSoundsAreTheSameOnEveryRender(t *testing.T) {
	a, err := sounds(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := sounds(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range a {
		if !slices.Equal(p, b[name]) {
			t.Errorf("%s differs between two renders", name)
		}
	}
}
