package audiotest

import (
	"path/filepath"
	"strconv"
	"testing"
)

// SpeechOptions shape an espeak-ng utterance.
type SpeechOptions struct {
	Voice string // "en-gb+f3"; "" is the default voice
	WPM   int    // words per minute; 0 is espeak-ng's default (175)
	Pitch int    // 0..99; 0 is the default (50)
}

// Say speaks text as o asks and returns the words alone, 16 kHz mono,
// without padding (for tests that build their own streams).
func Say(t testing.TB, o SpeechOptions, text string) []int16 {
	t.Helper()
	dir := t.TempDir()
	wav := filepath.Join(dir, "say.wav")
	raw := filepath.Join(dir, "say.s16")
	args := []string{"-w", wav}
	if o.Voice != "" {
		args = append(args, "-v", o.Voice)
	}
	if o.WPM > 0 {
		args = append(args, "-s", strconv.Itoa(o.WPM))
	}
	if o.Pitch > 0 {
		args = append(args, "-p", strconv.Itoa(o.Pitch))
	}
	run(t, "espeak-ng", append(args, text)...)
	run(t, "sox", "-D", wav, "-r", strconv.Itoa(SpeechRate), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw)
	s, err := ReadRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
