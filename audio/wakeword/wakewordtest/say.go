package wakewordtest

import "strings"

// Say renders text in voice ("en-gb+m3") at wpm and pitch, cached in the
// set's folder like the set's own clips, trimmed to its voice with 50 ms
// around it (BenchmarkWakeSetVerified's enrollments).
func (s *Set) Say(voice string, wpm, pitch int, text string) ([]int16, error) {
	c := Clip{Voice: voice, WPM: wpm, Pitch: pitch, Text: text}
	if v, variant, ok := strings.Cut(voice, "+"); ok {
		c.Voice, c.Variant = v, variant
	}
	if err := say(s.Dir, &c); err != nil {
		return nil, err
	}
	return c.PCM, nil
}
