package ort_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/wakeword"
)

// enrollVoice is how one espeak-ng voice enrolls: the phrase said five
// times at other speeds and pitches than the clips it is tested on, and
// the enrollment prompts.
func enrollVoice(t testing.TB, voice string) wakeword.Enrollment {
	t.Helper()
	e := wakeword.Enrollment{Model: 0, Name: "hey_jarvis"}
	for _, sp := range [][2]int{{130, 45}, {175, 65}, {145, 72}, {190, 50}, {160, 35}} {
		e.Phrases = append(e.Phrases, audiotest.Say(t, audiotest.SpeechOptions{Voice: voice, WPM: sp[0], Pitch: sp[1]}, "hey jarvis"))
	}
	for i, text := range wakeword.EnrollPrompts {
		e.Others = append(e.Others, audiotest.Say(t, audiotest.SpeechOptions{Voice: voice, WPM: 140 + 10*(i%4), Pitch: 40 + 5*(i%5)}, text))
	}
	return e
}

// TestTheOwnersVerifierRejectsAConfusableTheModelAccepts: "hey Janice" in
// espeak-ng's en-gb voice wakes hey_jarvis on its own (a confusable of the
// wake set's). A verifier enrolled with five takes of "hey jarvis" and the
// prompts in that voice keeps it from waking, and still lets through the
// phrase said in that voice at a speed and pitch it did not enroll, alone
// and with a command.
func TestTheOwnersVerifierRejectsAConfusableTheModelAccepts(t *testing.T) {
	rt, names := runtime(t)
	const voice = "en-gb"
	v, err := wakeword.Enroll(rt, enrollVoice(t, voice))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verifier: %d phrases, %d negative windows", v.Phrases, v.Negatives)
	clips := []struct {
		text       string
		wpm, pitch int
		wake       bool
	}{
		{"hey Janice", 150, 60, false},
		{"hey jarvis", 150, 60, true},
		{"hey jarvis, turn the lights off", 165, 40, true},
	}
	rng := rand.New(rand.NewPCG(24, 3))
	for _, c := range clips {
		words := audiotest.Say(t, audiotest.SpeechOptions{Voice: voice, WPM: c.wpm, Pitch: c.pitch}, c.text)
		stream := make([]int16, samples(3*time.Second)+len(words)+samples(2*time.Second))
		mix(stream, words, samples(3*time.Second), 1)
		mix(stream, noise(rng, len(stream), -65), 0, 1)
		heard := func(o wakeword.Options) (bool, string) {
			det, err := wakeword.NewDetectorWith(rt, names, o)
			if err != nil {
				t.Fatal(err)
			}
			found, err := feedAll(det, stream)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range found {
				if d.Model == "hey_jarvis" {
					return true, fmt.Sprintf("score %.2f, verifier %.2f", d.Score, d.Verified)
				}
			}
			return false, "not heard"
		}
		bare, how := heard(wakeword.Shipped)
		t.Logf("%q %s %dwpm p%d without the verifier: %s", c.text, voice, c.wpm, c.pitch, how)
		if !bare {
			t.Fatalf("%q in %s does not wake the bare model: the test needs a clip it does", c.text, voice)
		}
		o := wakeword.Shipped
		o.Verifiers = []*wakeword.Verifier{v}
		got, how := heard(o)
		t.Logf("%q with the verifier: %s", c.text, how)
		if got != c.wake {
			t.Errorf("%q in %s: heard %v with the owner's verifier, want %v (%s)", c.text, voice, got, c.wake, how)
		}
	}
}
