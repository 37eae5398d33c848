package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/internal/testbin"
)

// TestAPlantedVerifierCannotMakeEveryWindowWake (issue 41, item 4): the
// service user may write the verifier file the detector reads at each start.
// One whose bias makes it take every window (weights 0, bias 50) must not
// make the real detector fire on a quiet room or on noise: a verifier may
// lower the model's bar no further than openWakeWord's candidate score
// (0.1), and a file that asks for less is named in verifier_error and the
// model runs without it.
func TestAPlantedVerifierCannotMakeEveryWindowWake(t *testing.T) {
	f := wakewordtest.Fetch(t)
	bin := testbin.Build(t, "./cmd/agenthost-wakeword")
	dir := t.TempDir()
	file := wakeword.VerifierFile(dir, "hey_jarvis")
	quiet := make([]int16, 8*wakeword.Rate)
	for i := range quiet {
		quiet[i] = int16(i%7 - 3) // a faint floor
	}
	rng := rand.New(rand.NewPCG(41, 4))
	noise := make([]int16, 8*wakeword.Rate)
	for i := range noise {
		noise[i] = int16(rng.NormFloat64() * 3000)
	}
	for _, c := range []struct {
		name                 string
		candidate, threshold float64
		refused              bool // Check must turn it away
	}{
		{"every window a candidate", 1e-30, 1e-30, true},
		{"threshold under a half", 0.1, 0.01, true},
		{"at the floor", wakeword.DefaultCandidate, 0.5, false},
	} {
		v := wakeword.Verifier{Version: wakeword.VerifierVersion, Model: "hey_jarvis", Window: 16,
			Candidate: c.candidate, Threshold: c.threshold, Weights: make([]float32, 16*96), Bias: 50}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"--dir", f.Dir, "--onnxruntime", f.ONNXRuntime, "--verifiers", dir, "hey_jarvis"}
		for sound, pcm := range map[string][]int16{"a quiet room": quiet, "noise": noise} {
			ready, fired := detectPCM(t, exec.Command(bin, args...), pcm)
			if slices.Contains(fired, "hey_jarvis") {
				t.Errorf("%s: the planted verifier (candidate %g, threshold %g, bias 50) made %s wake the detector (ready %+v)", c.name, c.candidate, c.threshold, sound, ready)
			}
			if refused := len(ready.Verified) == 0 && strings.Contains(ready.VerifierError, filepath.Base(file)); refused != c.refused {
				t.Errorf("%s: ready %+v; want the file refused (named in verifier_error): %v", c.name, ready, c.refused)
			}
		}
	}
}
