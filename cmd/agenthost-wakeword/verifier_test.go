package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/internal/testbin"
)

// hears runs the detector (bin with args), feeds it words after 3 s of
// quiet and returns its ready line and whether hey_jarvis fired.
func hears(t *testing.T, bin string, args []string, words []int16) (wakeword.Message, bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	pcm := append(append(make([]int16, 3*wakeword.Rate), words...), make([]int16, 2*wakeword.Rate)...)
	for i := range pcm {
		pcm[i] += int16(i%7 - 3) // a faint floor
	}
	ready, fired := detectPCM(t, cmd, pcm)
	return ready, slices.Contains(fired, "hey_jarvis")
}

// TestAnEnrolledVerifierIsLoadedAndABrokenOneIsNot: `agenthost-wakeword
// --enroll` trains the owner's verifier from recordings (five takes of
// "hey jarvis" and the prompts, in espeak-ng's en-gb voice) and writes it
// where --verifiers finds it; the detector loads it, says so in its ready
// line, and "hey Janice" in that voice (which wakes the bare model) no
// longer wakes it while "hey jarvis" still does. A verifier file that is
// broken or foreign is named in the ready line and the detector runs
// without it.
func TestAnEnrolledVerifierIsLoadedAndABrokenOneIsNot(t *testing.T) {
	f := wakewordtest.Fetch(t)
	bin := testbin.Build(t, "./cmd/agenthost-wakeword")
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "wakeword")
	args := []string{"--dir", f.Dir, "--onnxruntime", f.ONNXRuntime}
	enroll := append(append([]string(nil), args...), "--enroll", state)
	say := func(name string, wpm, pitch int, text string) string {
		p := filepath.Join(dir, name+".s16")
		if err := audiotest.WriteRaw(p, audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: wpm, Pitch: pitch}, text)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i, sp := range [][2]int{{130, 45}, {175, 65}, {145, 72}, {190, 50}, {160, 35}} {
		enroll = append(enroll, "--phrase", say(fmt.Sprint("phrase", i), sp[0], sp[1], "hey jarvis"))
	}
	for i, text := range wakeword.EnrollPrompts {
		enroll = append(enroll, "--other", say(fmt.Sprint("other", i), 140+10*(i%4), 40+5*(i%5), text))
	}
	out, err := exec.Command(bin, append(enroll, "hey_jarvis")...).Output()
	if err != nil {
		t.Fatalf("enroll: %v: %s", err, out)
	}
	var m wakeword.Message
	if err := json.Unmarshal(out, &m); err != nil || m.Type != wakeword.KindEnrolled || m.Phrases != 5 {
		t.Fatalf("enroll said %q, want an enrolled line with 5 phrases", out)
	}
	file := wakeword.VerifierFile(state, "hey_jarvis")
	if _, err := wakeword.LoadVerifier(file); err != nil {
		t.Fatal(err)
	}
	janice := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 150, Pitch: 60}, "hey Janice")
	jarvis := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 150, Pitch: 60}, "hey jarvis")
	if _, fired := hears(t, bin, append(append([]string(nil), args...), "hey_jarvis"), janice); !fired {
		t.Fatal("\"hey Janice\" does not wake the bare model: the test needs one that does")
	}
	verified := append(append([]string(nil), args...), "--verifiers", state, "hey_jarvis")
	ready, fired := hears(t, bin, verified, janice)
	if len(ready.Verified) != 1 || ready.Verified[0] != "hey_jarvis" || ready.VerifierError != "" || fired {
		t.Errorf("with the verifier: ready %+v, \"hey Janice\" fired %v; want hey_jarvis verified, not fired", ready, fired)
	}
	if _, fired := hears(t, bin, verified, jarvis); !fired {
		t.Error("with the verifier, \"hey jarvis\" did not fire")
	}

	for name, content := range map[string]string{
		"garbage": "\x00\x01not json",
		"foreign": `{"version": 1, "model": "hey_jarvis", "window": 16, "candidate": 0.1, "threshold": 0.9, "weights": [1, 2, 3], "bias": 0}`,
		"future":  `{"version": 99}`,
	} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		ready, fired := hears(t, bin, verified, janice)
		if len(ready.Verified) != 0 || !strings.Contains(ready.VerifierError, file) || !fired {
			t.Errorf("%s verifier file: ready %+v, fired %v; want it named in verifier_error and the bare model heard", name, ready, fired)
		}
	}
}
