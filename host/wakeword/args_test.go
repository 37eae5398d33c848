package wakeword

import (
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
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

// TestScoresInARowReachTheDetector: conversation.wake_word.over is passed
// on as --over, before the models; 1 (or none) leaves the detector's own.
func TestScoresInARowReachTheDetector(t *testing.T) {
	args := Settings{Models: []string{"hey_jarvis"}, Threshold: 0.9, Dir: "/d", Over: 2}.Args()
	i := slices.Index(args, "--over")
	if i < 0 || i+1 >= len(args) || args[i+1] != "2" || i > slices.Index(args, "--") {
		t.Errorf("args = %q, want --over 2 before --", args)
	}
	for _, over := range []int{0, 1} {
		if args := (Settings{Models: []string{"hey_jarvis"}, Dir: "/d", Over: over}).Args(); slices.Contains(args, "--over") {
			t.Errorf("args with over %d = %q", over, args)
		}
	}
}

// TestEachModelsPointReachesTheDetector: a model's own threshold and scores
// in a row are passed on as --point MODEL=THRESHOLD,OVER before the
// models, in the models' order.
func TestEachModelsPointReachesTheDetector(t *testing.T) {
	args := Settings{Models: []string{"hey_jarvis", "hey_jarvis_agenthost", "alexa"}, Threshold: 0.5, Dir: "/d",
		PerModel: map[string]wakeword.Point{"alexa": {Threshold: 0.6, Over: 1}, "hey_jarvis_agenthost": {Threshold: 0.9, Over: 2}}}.Args()
	var points []string
	for i, a := range args {
		if a == "--point" && i+1 < len(args) && i < slices.Index(args, "--") {
			points = append(points, args[i+1])
		}
	}
	if !slices.Equal(points, []string{"hey_jarvis_agenthost=0.9,2", "alexa=0.6,1"}) {
		t.Errorf("args = %q, want --point hey_jarvis_agenthost=0.9,2 --point alexa=0.6,1 before --", args)
	}
}
