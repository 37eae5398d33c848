package talk

import (
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/heads"
	"github.com/agenthost/agenthost/config"
)

// TestTheDetectorsSettingsComeFromConversationWakeWord: what the
// configuration says of the models' scoring reaches the detector's
// settings (and so its command line, hostwake.Settings.Args).
func TestTheDetectorsSettingsComeFromConversationWakeWord(t *testing.T) {
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Step, w.Over = []string{"hey_jarvis_agenthost"}, 0.9, config.Duration(40*time.Millisecond), 2
	s := settings(cfg)
	if len(s.Models) != 1 || s.Models[0] != "hey_jarvis_agenthost" || s.Threshold != 0.9 || s.Step != 40*time.Millisecond || s.Over != 2 {
		t.Errorf("settings = %+v", s)
	}
}

// TestEachModelsOwnPointReachesTheDetector: conversation.wake_word.per_model
// gives a model its own threshold and scores in a row; what it leaves
// unset is the global one.
func TestEachModelsOwnPointReachesTheDetector(t *testing.T) {
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Over = []string{"hey_jarvis", "hey_jarvis_agenthost"}, 0.5, 1
	w.PerModel = map[string]config.WakePoint{"hey_jarvis_agenthost": {Threshold: 0.9, Over: 2}, "hey_jarvis": {Over: 3}}
	s := settings(cfg)
	if s.PerModel["hey_jarvis_agenthost"] != (wakeword.Point{Threshold: 0.9, Over: 2}) || s.PerModel["hey_jarvis"] != (wakeword.Point{Threshold: 0.5, Over: 3}) || len(s.PerModel) != 2 {
		t.Errorf("per model = %+v", s.PerModel)
	}
}

// TestTheCheckSaysEachModelsPoint: `agenthost check` says the threshold and
// scores in a row, and each model's own where it has one.
func TestTheCheckSaysEachModelsPoint(t *testing.T) {
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Over = []string{"hey_jarvis", "hey_jarvis_agenthost"}, 0.5, 1
	w.PerModel = map[string]config.WakePoint{"hey_jarvis_agenthost": {Threshold: 0.9, Over: 2}}
	if got, want := operatingPoints(settings(cfg), nil), "threshold 0.5, 1 in a row; hey_jarvis_agenthost at 0.9, 2 in a row"; got != want {
		t.Errorf("the check says %q, want %q", got, want)
	}
}

// TestTheCheckSaysAVerifiedModelFiresAtItsVerifiersThreshold: a model with
// an owner's verifier fires at the verifier's threshold, whatever per_model
// gives it (its scores in a row still apply, to the verifier's
// probability), so `agenthost check` must not say per_model's threshold
// for it.
func TestTheCheckSaysAVerifiedModelFiresAtItsVerifiersThreshold(t *testing.T) {
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Over = []string{"hey_jarvis", "/opt/mine_v0.1.onnx"}, 0.5, 1
	w.PerModel = map[string]config.WakePoint{"hey_jarvis": {Threshold: 0.9, Over: 2}}
	got := operatingPoints(settings(cfg), []string{"hey_jarvis", "mine"})
	if want := "threshold 0.5, 1 in a row; hey_jarvis at its owner's verifier's threshold, 2 in a row; /opt/mine_v0.1.onnx at its owner's verifier's threshold, 1 in a row"; got != want {
		t.Errorf("the check says %q, want %q", got, want)
	}
}

// TestAnOwnModelRunsAtItsOwnPointUnlessPerModelSaysOtherwise: agenthost's
// own head wakes about 16 times an hour on speech at the global 0.5, so
// named without a per_model entry it runs at the point it was measured at
// (heads.Point), not the global one; a per_model field still wins, and a
// pre-trained model without an entry keeps the global point.
func TestAnOwnModelRunsAtItsOwnPointUnlessPerModelSaysOtherwise(t *testing.T) {
	own, ok := heads.Point(heads.HeyJarvis)
	if !ok || own.Threshold < 0.5 || own.Over < 1 {
		t.Fatalf("the own model's point = %+v, %v", own, ok)
	}
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Over = []string{"hey_jarvis", heads.HeyJarvis}, 0.5, 1
	if s := settings(cfg); s.PerModel[heads.HeyJarvis] != own || len(s.PerModel) != 1 {
		t.Errorf("without per_model: %+v, want %s at %+v and nothing else", s.PerModel, heads.HeyJarvis, own)
	}
	if got, want := operatingPoints(settings(cfg), nil), fmt.Sprintf("threshold 0.5, 1 in a row; %s at %g, %d in a row", heads.HeyJarvis, own.Threshold, own.Over); got != want {
		t.Errorf("the check says %q, want %q", got, want)
	}
	w.PerModel = map[string]config.WakePoint{heads.HeyJarvis: {Threshold: 0.8}}
	if s := settings(cfg); s.PerModel[heads.HeyJarvis] != (wakeword.Point{Threshold: 0.8, Over: own.Over}) {
		t.Errorf("with a per_model threshold: %+v", s.PerModel)
	}
	w.PerModel = map[string]config.WakePoint{heads.HeyJarvis: {Over: 1}}
	if s := settings(cfg); s.PerModel[heads.HeyJarvis] != (wakeword.Point{Threshold: own.Threshold, Over: 1}) {
		t.Errorf("with per_model over: %+v", s.PerModel)
	}
}

// TestAStricterGlobalPointStillHoldsTheOwnModel: the own head's point is
// where it runs instead of a global one that would wake it more, not
// instead of one that wakes it less: a configuration that held it at 0.95
// three in a row by the global fields (as before per_model, or with it
// alone in models) must not be loosened to 0.9 two in a row by an upgrade
// (more false wakes: more of the room's audio sent). A field per_model
// gives still wins.
func TestAStricterGlobalPointStillHoldsTheOwnModel(t *testing.T) {
	own, _ := heads.Point(heads.HeyJarvis)
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Over = []string{heads.HeyJarvis}, 0.95, 3
	if got, want := settings(cfg).PerModel[heads.HeyJarvis], (wakeword.Point{Threshold: 0.95, Over: 3}); got != want {
		t.Errorf("global 0.95, 3 in a row: the own head runs at %+v, want %+v", got, want)
	}
	w.Threshold, w.Over = 0.95, 1
	if got, want := settings(cfg).PerModel[heads.HeyJarvis], (wakeword.Point{Threshold: 0.95, Over: own.Over}); got != want {
		t.Errorf("global 0.95, 1 in a row: the own head runs at %+v, want %+v", got, want)
	}
	w.PerModel = map[string]config.WakePoint{heads.HeyJarvis: {Threshold: 0.8}}
	if got, want := settings(cfg).PerModel[heads.HeyJarvis], (wakeword.Point{Threshold: 0.8, Over: own.Over}); got != want {
		t.Errorf("per_model threshold 0.8: the own head runs at %+v, want %+v", got, want)
	}
}
