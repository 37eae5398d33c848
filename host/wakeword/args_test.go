package wakeword

import (
	"slices"
	"testing"
	"time"
)

// TestTheStepReachesTheDetector: conversation.wake_word.step is passed on as
// --step, before the models; no step leaves the detector's own.
func TestTheStepReachesTheDetector(t *testing.T) {
	args := Settings{Models: []string{"hey_jarvis"}, Threshold: 0.5, Dir: "/d", Step: 80 * time.Millisecond}.Args()
	i := slices.Index(args, "--step")
	if i < 0 || i+1 >= len(args) || args[i+1] != "80ms" || i > slices.Index(args, "--") {
		t.Errorf("args = %q, want --step 80ms before --", args)
	}
	if args := (Settings{Models: []string{"hey_jarvis"}, Dir: "/d"}).Args(); slices.Contains(args, "--step") {
		t.Errorf("args without a step = %q", args)
	}
}
