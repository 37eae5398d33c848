package config

import (
	"strings"
	"testing"
)

func TestWakeWordSettings(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, "", nil)
	if w := c.Conversation.WakeWord; w.On() || w.Threshold != 0.5 || w.Dir != "/var/lib/agenthost/wakeword" || w.PreRoll.D().Milliseconds() != 300 || !w.Gate || w.Step.D().Milliseconds() != 20 || w.Over != 1 {
		t.Errorf("defaults = %+v", w)
	}
	if c := mustLoad(t, writeConfig(t, "conversation:\n  wake_word: {gate: false}\n"), nil); c.Conversation.WakeWord.Gate {
		t.Errorf("gate: false loads as %+v", c.Conversation.WakeWord)
	}
	if c := mustLoad(t, writeConfig(t, "conversation:\n  wake_word: {step: 80ms}\n"), nil); c.Conversation.WakeWord.Step.D().Milliseconds() != 80 {
		t.Errorf("step: 80ms loads as %+v", c.Conversation.WakeWord)
	}
	if c := mustLoad(t, writeConfig(t, "conversation:\n  wake_word: {over: 2}\n"), nil); c.Conversation.WakeWord.Over != 2 {
		t.Errorf("over: 2 loads as %+v", c.Conversation.WakeWord)
	}
	c = mustLoad(t, writeConfig(t, "conversation:\n  wake_word: {models: [hey_jarvis, hey_jarvis_agenthost], per_model: {hey_jarvis_agenthost: {threshold: 0.9, over: 2}, hey_jarvis: {over: 3}}}\n"), nil)
	if pm := c.Conversation.WakeWord.PerModel; pm["hey_jarvis_agenthost"] != (WakePoint{Threshold: 0.9, Over: 2}) || pm["hey_jarvis"] != (WakePoint{Over: 3}) {
		t.Errorf("per_model loads as %+v", pm)
	}
	c = mustLoad(t, writeConfig(t, "conversation:\n  wake_word: {models: [hey_jarvis, /opt/mine.onnx], threshold: 0.6, follow_up: 5s}\n  hooks: {wake: 'echo $AGENTHOST_MODEL'}\n"), nil)
	if w := c.Conversation.WakeWord; !w.On() || len(w.Models) != 2 || w.Threshold != 0.6 || w.FollowUp.D().Seconds() != 5 {
		t.Errorf("wake_word = %+v", w)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"conversation:\n  wake_word: {threshold: 1.5}\n", "conversation.wake_word.threshold: 1.5 is outside (0, 1)"},
		{"conversation:\n  wake_word: {threshold: high}\n", "conversation.wake_word.threshold: \"high\" is not a number"},
		{"conversation:\n  wake_word: {models: [Hey Jarvis]}\n", "is neither a model name"},
		{"conversation:\n  wake_word: {models: [models/mine.onnx]}\n", "give the model's absolute path"},
		{"conversation:\n  wake_word: {models: [/opt/mine.tflite]}\n", "is a path but not of an .onnx model"},
		{"conversation:\n  wake_word: {models: [alexa, alexa]}\n", "is listed twice"},
		{"conversation:\n  wake_word: {models: [a, b, c, d, e, f, g, h, i]}\n", "9 models; at most 8"},
		{"conversation:\n  wake_word: {onnxruntime: lib.so}\n", "give the library's absolute path"},
		{"conversation:\n  wake_word: {pre_roll: 2s}\n", "conversation.wake_word.pre_roll: 2s is outside 0…1s"},
		{"conversation:\n  wake_word: {follow_up: -1s}\n", "conversation.wake_word.follow_up: -1s is outside"},
		{"conversation:\n  wake_word: {max_turn: 0s}\n", "conversation.wake_word.max_turn: 0s is outside 1s…5m"},
		{"conversation:\n  wake_word: {modles: [alexa]}\n", "conversation.wake_word.modles"},
		{"conversation:\n  wake_word: {gate: sometimes}\n", "conversation.wake_word.gate"},
		{"conversation:\n  wake_word: {step: 30ms}\n", "conversation.wake_word.step: 30ms is not 20ms, 40ms or 80ms"},
		{"conversation:\n  wake_word: {over: 0}\n", "conversation.wake_word.over: 0 is outside 1…10"},
		{"conversation:\n  wake_word: {over: 11}\n", "conversation.wake_word.over: 11 is outside 1…10"},
		{"conversation:\n  wake_word: {models: [hey_jarvis], per_model: {alexa: {over: 2}}}\n", "conversation.wake_word.per_model.alexa: not one of conversation.wake_word.models"},
		{"conversation:\n  wake_word: {models: [hey_jarvis], per_model: {hey_jarvis: {threshold: 1.5}}}\n", "conversation.wake_word.per_model.hey_jarvis.threshold: 1.5 is outside (0, 1)"},
		{"conversation:\n  wake_word: {models: [hey_jarvis], per_model: {hey_jarvis: {over: 11}}}\n", "conversation.wake_word.per_model.hey_jarvis.over: 11 is outside 1…10"},
		{"conversation:\n  wake_word: {models: [hey_jarvis], per_model: {hey_jarvis: {treshold: 0.9}}}\n", "conversation.wake_word.per_model.hey_jarvis.treshold"},
		{"audio: {rate: 24000}\nconversation:\n  wake_word: {models: [alexa]}\n", "the wake word's models hear 16000 Hz"},
	} {
		_, err := Load(writeConfig(t, tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestAPathModelsPointCanBeOverridden: a model named by its path has dots
// in its name (mine.onnx); an override of its per_model point takes the
// name up to the point's field, as the file does, not "unknown key".
func TestAPathModelsPointCanBeOverridden(t *testing.T) {
	c, err := Load("", map[string]any{"conversation.wake_word.models": []any{"/opt/my.wake/mine.onnx"},
		"conversation.wake_word.per_model./opt/my.wake/mine.onnx.threshold": 0.9, "conversation.wake_word.per_model./opt/my.wake/mine.onnx.over": 2})
	if err != nil {
		t.Fatal(err)
	}
	if pm := c.Conversation.WakeWord.PerModel; pm["/opt/my.wake/mine.onnx"] != (WakePoint{Threshold: 0.9, Over: 2}) || len(pm) != 1 {
		t.Errorf("per_model = %+v", pm)
	}
}

// TestAPathModelsPointIsNamedAtItsLine: a per_model entry of a model named
// by its path (dots in its name) that is out of range is named at its own
// line of the file, as any other entry is.
func TestAPathModelsPointIsNamedAtItsLine(t *testing.T) {
	_, err := Load(writeConfig(t, "conversation:\n  wake_word:\n    models: [/opt/mine.onnx]\n    per_model:\n\n      /opt/mine.onnx:\n        over: 11\n"), nil)
	if err == nil || !strings.Contains(err.Error(), ":7: conversation.wake_word.per_model./opt/mine.onnx.over: 11 is outside") {
		t.Errorf("err = %v, want it at line 7", err)
	}
}

// TestBothOfAPointsProblemsAreNamed: a per_model entry whose threshold and
// over are both out of range names both, as the rest of the file's
// problems are all named at once.
func TestBothOfAPointsProblemsAreNamed(t *testing.T) {
	_, err := Load(writeConfig(t, "conversation:\n  wake_word: {models: [hey_jarvis], per_model: {hey_jarvis: {threshold: 1.5, over: 11}}}\n"), nil)
	for _, want := range []string{"per_model.hey_jarvis.threshold: 1.5 is outside", "per_model.hey_jarvis.over: 11 is outside"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q in it", err, want)
		}
	}
}
