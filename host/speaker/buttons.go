package speaker

import (
	"context"
	"errors"
	"os"

	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/trigger"
)

// errNoConversation: the daemon runs without a conversation.
var errNoConversation = errors.New("no conversation: the daemon runs without audio")

// MicButton returns the part of the microphone's privacy button
// (device.mic_button), or nil when none is configured: each press turns the
// microphone off, or back on, as the owner.
func (s *Speaker) MicButton() part.Part {
	g := s.o.Config.Device.MicButton
	if g.Chip == "" || g.Line < 0 {
		return nil
	}
	return part.Func("microphone button", func(ctx context.Context) error {
		err := trigger.GPIO(ctx, trigger.GPIOOptions{Chip: g.Chip, Line: g.Line}, micButton{s}, s.o.Log)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Error("the microphone button is unavailable; the speaker runs without it (fix device.mic_button, or the unit's gpio group and DeviceAllow, then restart)", "err", err)
		}
		return nil
	})
}

// micButton toggles the microphone's privacy mute; the button is the owner's.
type micButton struct{ s *Speaker }

func (b micButton) Press() {
	d := b.s.dev
	if err := d.SetMicMuted(services.CallerOwner, !d.MicMuted()); err != nil {
		b.s.o.Log.Warn("microphone button", "err", err)
	}
}

func (micButton) Release() {}

// Triggers returns the push-to-talk parts the configuration asks for: the
// space bar when stdin is a terminal (conversation.push_to_talk_key) and a
// GPIO button (conversation.gpio). Both drive the conversation's TalkStart
// and TalkStop, after stopping what rings.
func (s *Speaker) Triggers() []part.Part {
	cfg, log := s.o.Config, s.o.Log
	var out []part.Part
	talk := talkButton{s}
	if cfg.Conversation.PushToTalkKey && cfg.Server.Params.Mode == "manual" {
		out = append(out, part.Func("push-to-talk key", func(ctx context.Context) error {
			return trigger.Key(ctx, os.Stdin, talk, log)
		}))
	}
	if g := cfg.Conversation.GPIO; g.Chip != "" && g.Line >= 0 {
		out = append(out, part.Func("push-to-talk button", func(ctx context.Context) error {
			err := trigger.GPIO(ctx, trigger.GPIOOptions{Chip: g.Chip, Line: g.Line}, talk, log)
			if err != nil && ctx.Err() == nil {
				// Not fatal: exiting would have systemd restart the daemon
				// over and over, and the speaker serves without its button.
				log.Error("push-to-talk button unavailable; the speaker runs without it (fix conversation.gpio, or the unit's gpio group and DeviceAllow, then restart)", "err", err)
			}
			return nil
		}))
	}
	return out
}

// talkButton is the talk key's and button's trigger.Handler.
type talkButton struct{ s *Speaker }

func (t talkButton) Press() {
	if _, err := t.s.talk("start"); err != nil {
		t.s.o.Log.Warn("push-to-talk: cannot start a turn", "err", err)
	}
}

func (t talkButton) Release() {
	if _, err := t.s.talk("stop"); err != nil {
		t.s.o.Log.Warn("push-to-talk: cannot end the turn", "err", err)
	}
}

// talk starts or ends a turn, as the talk button does: a press first stops
// what rings (and its release is ignored). It answers what it did.
func (s *Speaker) talk(action string) (map[string]string, error) {
	c := s.conv()
	if c == nil {
		return nil, errNoConversation
	}
	var task string
	var err error
	switch action {
	case "start":
		if s.talkStopsRinging("the talk button") {
			return map[string]string{"stopped": "ringing"}, nil
		}
		task, err = c.TalkStart()
	case "stop":
		if s.swallowed.CompareAndSwap(true, false) {
			return map[string]string{"stopped": "ringing"}, nil
		}
		task, err = c.TalkStop()
	default:
		err = errors.New(`action must be "start" or "stop"`)
	}
	return map[string]string{"task": task}, err
}
