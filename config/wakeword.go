package config

import (
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// WakeWord configures the wake word: a detector process (openWakeWord's
// models on ONNX Runtime) hears the microphone, and a turn starts when one
// of Models scores above Threshold. Off while Models is empty.
type WakeWord struct {
	// Models are names (hey_jarvis, alexa, hey_mycroft, hey_rhasspy: in
	// Dir/models, fetched by scripts/fetch-wakeword.sh; hey_jarvis_agenthost:
	// agenthost's own, built into the detector) or paths of the user's own
	// openWakeWord .onnx models.
	Models    []string `yaml:"models"`
	Threshold float64  `yaml:"threshold"`
	// Dir is where scripts/fetch-wakeword.sh put models/ and, on systems
	// without one, onnxruntime/.
	Dir string `yaml:"dir"`
	// ONNXRuntime is the library's path; "" finds it (the system's
	// libonnxruntime.so.1.*, then Dir/onnxruntime/libonnxruntime.so.1).
	ONNXRuntime string `yaml:"onnxruntime"`
	// FollowUp: after the reply to a turn the owner started, speech within
	// this long starts a turn without the wake word (0: off); a reply the
	// server pushes unasked opens no window.
	FollowUp Duration `yaml:"follow_up"`
	// PreRoll is the audio from before the point of detection sent with the
	// turn, so that a command said in the same breath arrives whole.
	PreRoll Duration `yaml:"pre_roll"`
	// MaxTurn ends a turn that the end of speech has not ended.
	MaxTurn Duration `yaml:"max_turn"`
	// Gate keeps the detector idle while the room is quiet: a cheap level
	// gate in the host wakes it, with the audio of its context, at the
	// first sound (audio/gate). On by default.
	Gate bool `yaml:"gate"`
	// Step is how often the models score: 20ms (every phase of their 80 ms
	// grid: where the phrase falls no longer matters), 40ms or 80ms (a
	// quarter of the CPU of 20ms, for a slow board; scores then depend on
	// where the grid falls in the speech by up to 0.6).
	Step Duration `yaml:"step"`
	// Over is how many scores in a row must reach the threshold (1: the
	// first fires). A model's own operating point may want more: a higher
	// threshold held for two scores turns away more near misses.
	Over int `yaml:"over"`
	// PerModel gives models (by name, as in Models) their own operating
	// point. A field left out is, for agenthost's own head, the point it
	// was measured at (heads.Point: 0.9 two in a row) or Threshold and Over
	// where they are stricter, else Threshold and Over (the pre-trained
	// models are measured at 0.5 one). A model with
	// an owner's verifier fires at the verifier's threshold instead; Over
	// still applies.
	PerModel map[string]WakePoint `yaml:"per_model"`
}

// WakePoint is one model's threshold and scores in a row; 0 is the
// model's own point or the wake word's (see PerModel).
type WakePoint struct {
	Threshold float64 `yaml:"threshold"`
	Over      int     `yaml:"over"`
}

// On reports whether the wake word is configured.
func (w WakeWord) On() bool { return len(w.Models) > 0 }

func defaultWakeWord() WakeWord {
	return WakeWord{Models: []string{}, Threshold: 0.5, Dir: "/var/lib/agenthost/wakeword",
		PreRoll: Duration(300 * time.Millisecond), MaxTurn: Duration(30 * time.Second), Gate: true,
		Step: Duration(20 * time.Millisecond), Over: 1, PerModel: map[string]WakePoint{}}
}

// Bounds of the wake-word settings.
const (
	MaxWakeModels = 8
	maxPreRoll    = time.Second
	maxFollowUp   = 5 * time.Minute
	maxTurn       = 5 * time.Minute
	maxOver       = 10 // as the detector's --over
)

var modelName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

func (l *loader) wakeWord(c *Config) {
	w := c.Conversation.WakeWord
	key := "conversation.wake_word."
	if len(w.Models) > MaxWakeModels {
		l.errorf(path(key+"models"), "%d models; at most %d run at once", len(w.Models), MaxWakeModels)
	}
	seen := map[string]bool{}
	for i, m := range w.Models {
		isPath := strings.ContainsRune(m, '/') || strings.HasSuffix(m, ".onnx")
		switch {
		case isPath && !strings.HasSuffix(m, ".onnx"):
			l.errorf(path(key+"models"), "item %d, %q, is a path but not of an .onnx model", i+1, m)
		case isPath && !filepath.IsAbs(m):
			l.errorf(path(key+"models"), "item %d, %q: give the model's absolute path", i+1, m)
		case !isPath && !modelName.MatchString(m):
			l.errorf(path(key+"models"), "item %d, %q, is neither a model name (like hey_jarvis) nor the path of an .onnx file", i+1, m)
		case seen[m]:
			l.errorf(path(key+"models"), "item %d, %q, is listed twice", i+1, m)
		}
		seen[m] = true
	}
	if math.IsNaN(w.Threshold) || w.Threshold <= 0 || w.Threshold >= 1 {
		l.errorf(path(key+"threshold"), "%g is outside (0, 1); 0.5 suits the pre-trained models", w.Threshold)
	}
	if st := time.Duration(w.Step); st != 20*time.Millisecond && st != 40*time.Millisecond && st != 80*time.Millisecond {
		l.errorf(path(key+"step"), "%s is not 20ms, 40ms or 80ms (20ms is the default; 80ms costs a quarter of its CPU)", w.Step)
	}
	if w.Over < 1 || w.Over > maxOver {
		l.errorf(path(key+"over"), "%d is outside 1…%d (1, the default: the first score at the threshold fires)", w.Over, maxOver)
	}
	for _, m := range slices.Sorted(maps.Keys(w.PerModel)) {
		p, k := w.PerModel[m], append(path(key+"per_model"), m) // m may hold dots: a path
		if !slices.Contains(w.Models, m) {
			l.errorf(k, "not one of conversation.wake_word.models (%s)", strings.Join(w.Models, ", "))
			continue
		}
		if math.IsNaN(p.Threshold) || p.Threshold < 0 || p.Threshold >= 1 {
			l.errorf(append(k[:len(k):len(k)], "threshold"), "%g is outside (0, 1)", p.Threshold)
		}
		if p.Over < 0 || p.Over > maxOver {
			l.errorf(append(k[:len(k):len(k)], "over"), "%d is outside 1…%d", p.Over, maxOver)
		}
	}
	if w.Dir == "" || !filepath.IsAbs(w.Dir) {
		l.errorf(path(key+"dir"), "%q is not an absolute folder; the default is /var/lib/agenthost/wakeword", w.Dir)
	}
	if w.ONNXRuntime != "" && !filepath.IsAbs(w.ONNXRuntime) {
		l.errorf(path(key+"onnxruntime"), "%q: give the library's absolute path, or \"\" to find it", w.ONNXRuntime)
	}
	if w.FollowUp < 0 || w.FollowUp > Duration(maxFollowUp) {
		l.errorf(path(key+"follow_up"), "%s is outside 0…%s (0 turns it off)", w.FollowUp, Duration(maxFollowUp))
	}
	if w.PreRoll < 0 || w.PreRoll > Duration(maxPreRoll) {
		l.errorf(path(key+"pre_roll"), "%s is outside 0…%s", w.PreRoll, Duration(maxPreRoll))
	}
	if w.MaxTurn < Duration(time.Second) || w.MaxTurn > Duration(maxTurn) {
		l.errorf(path(key+"max_turn"), "%s is outside 1s…%s", w.MaxTurn, Duration(maxTurn))
	}
	if w.On() && c.Audio.Rate != 16000 {
		l.errorf(path("audio.rate"), "%d Hz: the wake word's models hear 16000 Hz; set audio.rate: 16000 or turn conversation.wake_word off (models: [])", c.Audio.Rate)
	}
	if w.On() && c.Audio.Backend == "none" {
		l.warnf(path(key+"models"), "audio.backend is none: there is no microphone for the wake word to hear")
	}
}
