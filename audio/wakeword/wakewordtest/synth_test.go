package wakewordtest

import (
	"math"
	"sort"
	"testing"
)

// Every other synthesizer's voice says the phrase, slower at 120 words a
// minute than at 200 by about their ratio, and higher at pitch 80 than 30.
func TestOtherVoicesSayThePhraseAtTheSpeedAndPitchAsked(t *testing.T) {
	dir := t.TempDir()
	for _, v := range OtherVoices {
		t.Run(v, func(t *testing.T) {
			clip := func(wpm, pitch int) Clip {
				c := Clip{Voice: v, WPM: wpm, Pitch: pitch, Text: "hey jarvis"}
				if err := say(dir, &c); err != nil {
					t.Fatal(err)
				}
				return c
			}
			slow, fast := clip(120, 50), clip(200, 50)
			ratio := float64(slow.End-slow.Onset) / float64(fast.End-fast.Onset)
			if math.Abs(ratio-200.0/120) > 0.25 {
				t.Errorf("voiced %d samples at 120 wpm, %d at 200: ratio %.2f, want about %.2f", slow.End-slow.Onset, fast.End-fast.Onset, ratio, 200.0/120)
			}
			low, high := pitchOf(clip(160, 30)), pitchOf(clip(160, 80))
			if want := math.Pow(2, 500.0/1200); high/low < want*0.85 || high/low > want*1.15 {
				t.Errorf("pitch %.0f Hz at 30, %.0f Hz at 80: ratio %.2f, want about %.2f", low, high, high/low, want)
			}
		})
	}
}

// pitchOf is the median pitch of c's voiced 40 ms frames (autocorrelation,
// 60–400 Hz).
func pitchOf(c Clip) float64 {
	var f0s []float64
	p := c.PCM[c.Onset:c.End]
	for i := 0; i+640 <= len(p); i += 320 {
		w := p[i : i+640]
		best, lag := 0.0, 0
		var e float64
		for _, v := range w {
			e += float64(v) * float64(v)
		}
		for l := 16000 / 400; l <= 16000/60; l++ {
			var r float64
			for k := 0; k+l < len(w); k++ {
				r += float64(w[k]) * float64(w[k+l])
			}
			if r > best {
				best, lag = r, l
			}
		}
		if lag > 0 && best > 0.5*e {
			f0s = append(f0s, 16000/float64(lag))
		}
	}
	if len(f0s) == 0 {
		return 0
	}
	sort.Float64s(f0s)
	return f0s[len(f0s)/2]
}
