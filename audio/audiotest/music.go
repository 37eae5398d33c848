package audiotest

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Music synthesizes about dur of music with sox, 16 kHz mono, the same for
// the same seed: a chord progression in a key and tempo drawn from seed,
// each chord a plucked bass, three plucked chord notes and a melody note
// (a square or triangle wave), mixed down and normalized to -3 dBFS peak.
func Music(t testing.TB, seed uint64, dur time.Duration) []int16 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x6d75736963))
	key := rng.IntN(12) - 6                             // semitones from A
	beat := 0.25 + 0.2*rng.Float64()                    // seconds per chord
	lead := []string{"square", "triangle"}[rng.IntN(2)] // the melody's timbre
	prog := [][3]int{{0, 4, 7}, {9, 12, 16}, {5, 9, 12}, {7, 11, 14}, {2, 5, 9}, {4, 7, 11}}
	scale := []int{0, 2, 4, 5, 7, 9, 11, 12, 14, 16}
	var args []string
	wav := filepath.Join(t.TempDir(), "music.wav")
	args = append(args, "-n", "-r", strconv.Itoa(SpeechRate), "-c", "5", wav)
	chord := prog[0]
	for i := 0; float64(i)*beat < dur.Seconds(); i++ {
		if i%4 == 0 {
			chord = prog[rng.IntN(len(prog))]
		}
		if i > 0 {
			args = append(args, ":")
		}
		note := func(semi int) string { return fmt.Sprintf("%%%d", key+semi) }
		args = append(args, "synth", strconv.FormatFloat(beat, 'f', 3, 64),
			"pluck", note(chord[0]-24),
			"pluck", note(chord[0]-12), "pluck", note(chord[1]-12), "pluck", note(chord[2]-12),
			lead, note(scale[rng.IntN(len(scale))]),
			"vol", "0.2", "fade", "0", strconv.FormatFloat(beat, 'f', 3, 64), "0.05")
	}
	run(t, "sox", args...)
	raw := filepath.Join(t.TempDir(), "music.s16")
	run(t, "sox", "-D", wav, "-r", strconv.Itoa(SpeechRate), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw,
		"remix", "1v0.8,2v0.5,3v0.5,4v0.5,5v0.25", "gain", "-n", "-3")
	s, err := ReadRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
