package audiotest

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// SpeechRate is the sample rate of the clips Speech makes.
const SpeechRate = 16000

// SpeechPadding is the silence Speech appends after the words.
const SpeechPadding = time.Second

// Clip is a generated test clip.
type Clip struct {
	// Path of the raw s16le mono file (no header).
	Path string
	// Samples are the file's samples: the words, then SpeechPadding of silence.
	Samples []int16
	// Rate is the sample rate (SpeechRate).
	Rate int
	// Words is the number of samples before the trailing silence.
	Words int
}

// Speech speaks text with espeak-ng, converts it with sox to 16 kHz mono
// s16le raw in a file under t.TempDir(), padded with SpeechPadding of
// silence (so ALSA's repeat-at-EOF only repeats silence). The same text
// gives the same samples every time (sox's dither is off). It fails the test
// when espeak-ng or sox is missing (apt: espeak-ng sox).
func Speech(t testing.TB, text string) Clip {
	t.Helper()
	return SpeechVoice(t, "", text)
}

// SpeechVoice is Speech in an espeak-ng voice ("en-gb+f3"; "" is the
// default voice).
func SpeechVoice(t testing.TB, voice, text string) Clip {
	t.Helper()
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	raw := filepath.Join(dir, "speech16k.s16")
	args := []string{"-w", wav}
	if voice != "" {
		args = append(args, "-v", voice)
	}
	run(t, "espeak-ng", append(args, text)...)
	// Words only first, to learn their length, then the padded file.
	words := filepath.Join(dir, "words.s16")
	run(t, "sox", "-D", wav, "-r", strconv.Itoa(SpeechRate), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", words)
	run(t, "sox", "-D", wav, "-r", strconv.Itoa(SpeechRate), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw,
		"pad", "0", strconv.FormatFloat(SpeechPadding.Seconds(), 'f', -1, 64))
	w, err := ReadRaw(words)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	return Clip{Path: raw, Samples: s, Rate: SpeechRate, Words: len(w)}
}

// Sox runs sox with args and fails the test on error (for format
// conversions in tests).
func Sox(t testing.TB, args ...string) {
	t.Helper()
	run(t, "sox", args...)
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed (apt-get install espeak-ng sox): %v", name, err)
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
