// Package talk is the daemon's conversation as a part: the conversation
// (host/conversation) built from the configuration, its microphone and
// speaker through the speaker's device, the wake word (host/wakeword) that
// opens its turns, the text turns of the owner (SayText), and its slice of
// a reload (hooks, audio devices, wake-word settings).
package talk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/heads"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/household"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/speaker"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
	"github.com/agenthost/agenthost/proto/voice"
)

// Talk is the conversation and the wake word.
type Talk struct {
	cfg  *config.Config // as at start: what a reload compares with is given to it
	log  *slog.Logger
	sp   *speaker.Speaker
	conv *conversation.Conversation
	wake *hostwake.Detector // nil when the wake word is off
	home *member            // nil when the speaker is in no household
}

// New builds the conversation of cfg: the microphone and speaker of
// audio.backend (through sp's device), the turn mode of
// server.params.mode, the wake word when it is on; l carries its frames.
func New(cfg *config.Config, log *slog.Logger, l *link.Link, sp *speaker.Speaker) (*Talk, error) {
	t := &Talk{cfg: cfg, log: log, sp: sp}
	a, p, cv := cfg.Audio, cfg.Server.Params, cfg.Conversation
	o := conversation.Options{
		Mode: p.Mode, AEC: cv.AEC, Rate: a.Rate, Frame: a.Frame.D(),
		JitterLead: cv.JitterLead.D(), ReplyTimeout: cv.ReplyTimeout.D(), InputOpus: p.InputAudioFormat == "opus", OutputOpus: p.Format == "opus",
		Hooks: cv.Hooks, Log: log, Jail: cfg.Jail(), HookDir: hookDir(cfg),
		EarconStart: cv.Earcons.ListenStart, EarconEnd: cv.Earcons.ListenEnd,
		EarconUnreachable: cv.Earcons.Unreachable,
		Attend: func(why string) (<-chan error, func()) {
			a := l.Attend(why)
			return a.Answer(), a.Release
		},
		Wake: t.wakeOptions(),
	}
	o.OpenSource, o.OpenSink = sp.AudioDevices(a)
	if out := sp.Output(); out != nil {
		o.Output, o.Attach = out, sp.Attach
	}
	o.MicMuted, o.Withheld = sp.Device().MicMuted, sp.Device().Withheld
	c, err := conversation.New(o, l)
	if err != nil {
		return nil, err
	}
	t.conv = c
	if t.home != nil {
		t.home.conv = c
	}
	return t, nil
}

// Conversation is the conversation.
func (t *Talk) Conversation() *conversation.Conversation { return t.conv }

// Detector is the wake word's detector; nil when the wake word is off.
func (t *Talk) Detector() *hostwake.Detector { return t.wake }

// Parts are the wake word's detector (when it is on), then the
// conversation, in the order they start.
func (t *Talk) Parts() []part.Part {
	var parts []part.Part
	if t.home != nil {
		parts = append(parts, t.home)
	}
	if t.wake != nil {
		parts = append(parts, t.wake)
	}
	return append(parts, t.conv)
}

// HouseholdStatus is the speaker's household, nil when it is in none (t
// may be nil).
func HouseholdStatus(t *Talk) *household.Status {
	if t == nil {
		return nil
	}
	return t.home.Status()
}

// settings are the detector's settings from the configuration; the
// owner's verifiers are in the state folder (agenthost wakeword enroll).
func settings(cfg *config.Config) hostwake.Settings {
	w := cfg.Conversation.WakeWord
	s := hostwake.Settings{Models: w.Models, Threshold: w.Threshold, Dir: w.Dir, ONNXRuntime: w.ONNXRuntime, Gate: w.Gate, Step: time.Duration(w.Step), Over: w.Over,
		Verifiers: filepath.Join(cfg.Plugins.StateDirectory(), hostwake.VerifierFolder)}
	for _, m := range w.Models {
		// A field per_model leaves out is heads.PointUnder's.
		own, isOwn := heads.PointUnder(m, wakeword.Point{Threshold: w.Threshold, Over: w.Over})
		p, ok := w.PerModel[m]
		if !ok && !isOwn {
			continue
		}
		if s.PerModel == nil {
			s.PerModel = map[string]wakeword.Point{}
		}
		s.PerModel[m] = wakeword.Point{Threshold: cmp.Or(p.Threshold, own.Threshold, w.Threshold), Over: cmp.Or(p.Over, own.Over, max(w.Over, 1))}
	}
	return s
}

// wakeOptions builds the wake word the configuration asks for: nil when it
// is off. It hands its detections to the conversation, after stopping what
// rings.
func (t *Talk) wakeOptions() *conversation.WakeOptions {
	cv := t.cfg.Conversation
	w := cv.WakeWord
	if !w.On() || t.cfg.Audio.Backend == "none" {
		return nil
	}
	t.home = newMember(t.cfg, t.log, t.sp)
	t.wake = hostwake.New(hostwake.Options{Settings: settings(t.cfg), Log: t.log, Jail: t.cfg.Jail(), Sounding: t.sounding, OnWake: func(d wakeword.Detection) {
		t.sp.StopRinging("whoever said the wake word")
		switch {
		case t.conv == nil:
		case t.home != nil:
			t.home.wake(d) // the household settles who answers
		default:
			t.conv.Wake(conversation.Detection{Model: d.Model, Score: d.Score, End: d.End})
		}
	}})
	feed := t.wake.Feed
	if t.home != nil {
		feed = func(pos int64, pcm []int16, ownSound bool) {
			t.home.meter.Feed(pos, pcm)
			t.wake.Feed(pos, pcm, ownSound)
		}
	}
	return &conversation.WakeOptions{Feed: feed, PreRoll: w.PreRoll.D(), FollowUp: w.FollowUp.D(), MaxTurn: w.MaxTurn.D(), Earcon: cv.Earcons.Wake}
}

// echoTail is how long after the speaker's last sound the microphone may
// still hear it: the room's reverberation and the output's latency.
const echoTail = time.Second

// sounding reports whether the microphone may hear the speaker's own sound
// now: the detector then holds the models to their points while sounding.
func (t *Talk) sounding() bool {
	out := t.sp.Output()
	return out != nil && out.SoundedWithin(echoTail)
}

// WakeStatus is the wake word's status: t's detector's, or why it is off
// (t may be nil: no conversation).
func WakeStatus(t *Talk, cfg *config.Config) hostwake.Status {
	if t != nil && t.wake != nil {
		return t.wake.Status()
	}
	why := "not configured (conversation.wake_word.models is empty)"
	switch {
	case cfg.Conversation.WakeWord.On() && cfg.Audio.Backend == "none":
		why = "audio.backend is none: no microphone"
	case cfg.Conversation.WakeWord.On():
		// On since a reload (or the microphone given since): no detector yet.
		why = "on in the configuration, but the detector starts with the daemon: restart it (systemctl restart agenthost)"
	}
	return hostwake.Status{State: "off", Why: why}
}

// Live implements part.Live. The wake word's settings are live only while
// its detector exists: one that is off starts with the daemon.
func (t *Talk) Live() []string {
	live := []string{"conversation.hooks",
		"audio.input", "audio.output", "audio.input_file", "audio.output_file", "audio.retry", "audio.pace", "audio.capture", "audio.echo_room"}
	if t.wake != nil {
		live = append(live, "conversation.wake_word.models", "conversation.wake_word.threshold", "conversation.wake_word.dir", "conversation.wake_word.onnxruntime",
			"conversation.wake_word.step", "conversation.wake_word.over", "conversation.wake_word.gate", "conversation.wake_word.per_model")
	}
	return live
}

// Waiting implements part.Waiting: turning the wake word on or off
// (conversation.wake_word.models to or from empty) applies after a restart.
func (t *Talk) Waiting(prev, next *config.Config, changed part.Changes) []string {
	if prev.Conversation.WakeWord.On() == next.Conversation.WakeWord.On() {
		return nil
	}
	var out []string
	for _, key := range changed {
		if (part.Changes{key}).Touched("conversation.wake_word") {
			out = append(out, key)
		}
	}
	return out
}

// Reload applies conversation.hooks, the audio devices, the turn mode and
// the audio formats of server.params (which the link's next connection
// sends), and the wake word's settings and verifiers; a detector that
// could not run is tried again at any reload.
func (t *Talk) Reload(prev, next *config.Config, changed part.Changes) {
	if changed.Touched("conversation.hooks") {
		t.conv.SetHooks(next.Conversation.Hooks)
	}
	if changed.Touched("audio.input", "audio.output", "audio.input_file", "audio.output_file", "audio.retry", "audio.pace", "audio.capture", "audio.echo_room") {
		t.conv.SetDevices(t.sp.AudioDevices(next.Audio))
	}
	if changed.Touched("server.params.mode") {
		t.conv.SetMode(next.Server.Params.Mode) // before the link reconnects with it
	}
	if changed.Touched("server.params.input_audio_format", "server.params.format") {
		// Before the link reconnects with them: the next connection is
		// the first to use them.
		p := next.Server.Params
		if err := t.conv.SetFormats(p.InputAudioFormat == "opus", p.Format == "opus"); err != nil {
			t.log.Error("the new audio formats cannot be used; the server is told them, but this direction keeps the old one until a restart (systemctl restart agenthost)",
				"input_audio_format", p.InputAudioFormat, "format", p.Format, "err", err)
		}
	}
	if prev.Conversation.WakeWord.On() != next.Conversation.WakeWord.On() {
		return // waits for a restart (Waiting); the reload says so
	}
	if t.wake == nil {
		return
	}
	if changed.Touched("conversation.wake_word") || !t.wake.Status().On || t.wake.VerifiersChanged() {
		t.wake.Reload(settings(next))
	}
}

// SayText starts a text turn: TEXT then END_FRAME on a new task. It
// returns once the server answered the PING sent with the turn, or with an
// error when it did not within server.liveness.answer_timeout (the link is
// then made again, and the owner told). t may be nil: no conversation.
func SayText(ctx context.Context, t *Talk, log *slog.Logger, text string) (string, error) {
	text = strings.NewReplacer(voice.EndMarker, "", voice.StartMarker, "").Replace(strings.TrimSpace(text))
	if text == "" {
		return "", errors.New("nothing to say: the text is empty")
	}
	if t == nil {
		return "", errors.New("no conversation: the daemon runs without one")
	}
	task, answer, err := t.conv.Say(text)
	if err != nil {
		return "", err
	}
	log.Info("text turn sent", "task", task)
	log.Debug("text turn", "task", task, "text", text)
	if answer != nil {
		select {
		case err = <-answer:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		return task, fmt.Errorf("the turn on task %s failed: %w", task, err)
	}
	return task, nil
}

// CheckWakeWord runs the detector once with the configuration's settings
// (`agenthost check`): it loads ONNX Runtime and the models, runs them, and
// says what it found or what is wrong.
func CheckWakeWord(ctx context.Context, cfg *config.Config) (string, error) {
	w := cfg.Conversation.WakeWord
	if !w.On() {
		return "off (conversation.wake_word.models is empty)", nil
	}
	m, err := hostwake.Check(ctx, "", settings(cfg))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("OK: models %s, ONNX Runtime %s (%s), %s", strings.Join(m.Models, ", "), m.ONNXRuntime, m.Library, operatingPoints(settings(cfg), m.Verified)), nil
}

// operatingPoints says at which threshold and scores in a row the models
// fire; a model with an owner's verifier (verified, by wakeword.ModelName)
// fires at the verifier's threshold, whatever per_model gives it.
func operatingPoints(s hostwake.Settings, verified []string) string {
	out := fmt.Sprintf("threshold %g, %d in a row", s.Threshold, max(s.Over, 1))
	for _, m := range s.Models {
		p, ok := s.PerModel[m]
		if !ok {
			p = wakeword.Point{Threshold: s.Threshold, Over: max(s.Over, 1)}
		}
		switch {
		case slices.Contains(verified, wakeword.ModelName(m)):
			out += fmt.Sprintf("; %s at its owner's verifier's threshold, %d in a row", m, p.Over)
		case ok:
			out += fmt.Sprintf("; %s at %g, %d in a row", m, p.Threshold, p.Over)
		}
	}
	return out
}

// hookDir is the event hooks' own folder, in the state folder.
func hookDir(cfg *config.Config) string {
	if d := cfg.Plugins.StateDirectory(); d != "" {
		return filepath.Join(d, "hooks")
	}
	return ""
}
