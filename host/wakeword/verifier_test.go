package wakeword

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// TestTheVerifiersFolderReachesTheDetector: Settings.Verifiers is passed on
// as --verifiers, before the models; none leaves it out.
func TestTheVerifiersFolderReachesTheDetector(t *testing.T) {
	args := Settings{Models: []string{"hey_jarvis"}, Threshold: 0.5, Dir: "/d", Verifiers: "/state/wakeword"}.Args()
	i := slices.Index(args, "--verifiers")
	if i < 0 || i+1 >= len(args) || args[i+1] != "/state/wakeword" || i > slices.Index(args, "--") {
		t.Errorf("args = %q, want --verifiers /state/wakeword before --", args)
	}
	if args := (Settings{Models: []string{"hey_jarvis"}, Dir: "/d"}).Args(); slices.Contains(args, "--verifiers") {
		t.Errorf("args without a verifiers folder = %q", args)
	}
}

// TestABrokenVerifierLeavesTheWakeWordOnAndSaysSo: a verifier file that is
// not one does not stop the detector: the wake word is on and hears the
// phrase with the bare model; status names the file and says the model
// runs without it, and the log warns once.
func TestABrokenVerifierLeavesTheWakeWordOnAndSaysSo(t *testing.T) {
	s := settings(t)
	s.Verifiers = t.TempDir()
	file := wakeword.VerifierFile(s.Verifiers, "hey_jarvis")
	if err := os.WriteFile(file, []byte("{not a verifier"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, s)
	st := r.d.Status()
	if !st.On || len(st.Verified) != 0 || !strings.Contains(st.VerifierError, file) || !strings.Contains(st.VerifierError, "runs without it") {
		t.Fatalf("status %+v; log:\n%s", st, r.log)
	}
	if n := strings.Count(r.log.String(), "owner's verifier not used"); n != 1 {
		t.Errorf("%d warnings of the verifier in the log, want 1:\n%s", n, r.log)
	}
	pcm, _ := phrase(t)
	feed(r.d, 0, pcm)
	waitFor(t, "the phrase heard without the verifier", func() bool { return len(r.wakes) > 0 })
	if _, err := os.Stat(filepath.Join(s.Verifiers, "hey_jarvis.verifier.json")); err != nil {
		t.Errorf("the broken file was moved or removed: %v", err)
	}
}
