package host

import (
	"time"

	"context"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/conversation"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
)

// wakeSettings are the detector's settings from the configuration.
func wakeSettings(w config.WakeWord) hostwake.Settings {
	return hostwake.Settings{Models: w.Models, Threshold: w.Threshold, Dir: w.Dir, ONNXRuntime: w.ONNXRuntime, Gate: w.Gate, Step: time.Duration(w.Step)}
}

// wakeOptions builds the wake word for the conversation the configuration
// asks for: nil when it is off. The detector is made here and run by
// WakeWord's component; it hands its detections to the conversation.
func (h *Host) wakeOptions() *conversation.WakeOptions {
	cv := h.cfg.Conversation
	w := cv.WakeWord
	if !w.On() || h.cfg.Audio.Backend == "none" {
		return nil
	}
	h.wake = hostwake.New(hostwake.Options{Settings: wakeSettings(w), Log: h.log, OnWake: func(d wakeword.Detection) {
		h.speaker.StopRinging("the wake word was heard")
		if h.conv != nil {
			h.conv.Wake(conversation.Detection{Model: d.Model, Score: d.Score, End: d.End})
		}
	}})
	return &conversation.WakeOptions{Feed: h.wake.Feed, PreRoll: w.PreRoll.D(), FollowUp: w.FollowUp.D(), MaxTurn: w.MaxTurn.D(), Earcon: cv.Earcons.Wake}
}

// WakeWord is the wake-word detector's component (nil when the wake word
// is off); add it with the conversation, after Conversation made it.
func (h *Host) WakeWord() Component {
	if h.wake == nil {
		return nil
	}
	return h.wake
}

// wakeStatus is the wake word's part of Status.
func (h *Host) wakeStatus() hostwake.Status {
	if h.wake != nil {
		return h.wake.Status()
	}
	why := "not configured (conversation.wake_word.models is empty)"
	if h.cfg.Conversation.WakeWord.On() {
		why = "audio.backend is none: no microphone"
	}
	return hostwake.Status{State: "off", Why: why}
}

// applyWakeWord applies changed wake-word settings at a reload; a detector
// that could not run is tried again at any reload.
func (h *Host) applyWakeWord(prev, next *config.Config, changed []string) {
	if prev.Conversation.WakeWord.On() != next.Conversation.WakeWord.On() {
		h.log.Warn("turning the wake word on or off applies after a restart (systemctl restart agenthost)")
		return
	}
	if h.wake == nil {
		return
	}
	st := h.wake.Status()
	if touched(changed, "conversation.wake_word") || !st.On {
		h.wake.Reload(wakeSettings(next.Conversation.WakeWord))
	}
}

// CheckWakeWord runs the detector once with the configuration's settings
// (`agenthost check`): it loads ONNX Runtime and the models, runs them, and
// says what it found or what is wrong.
func CheckWakeWord(ctx context.Context, cfg *config.Config) (string, error) {
	w := cfg.Conversation.WakeWord
	if !w.On() {
		return "off (conversation.wake_word.models is empty)", nil
	}
	m, err := hostwake.Check(ctx, "", wakeSettings(w))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("OK: models %s, ONNX Runtime %s (%s), threshold %g", strings.Join(m.Models, ", "), m.ONNXRuntime, m.Library, w.Threshold), nil
}
