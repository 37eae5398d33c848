package host

import (
	"context"
	"os"

	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/trigger"
)

// Triggers returns the push-to-talk components the configuration asks for: the
// space bar when stdin is a terminal (conversation.push_to_talk_key) and a GPIO
// button (conversation.gpio). Both drive the conversation's TalkStart/TalkStop.
func (h *Host) Triggers(conv *conversation.Conversation) []Component {
	var out []Component
	talk := talkHandler{conv: conv, h: h}
	if h.cfg.Conversation.PushToTalkKey && h.cfg.Server.Params.Mode == "manual" {
		out = append(out, part.Func("push-to-talk key", func(ctx context.Context) error {
			return trigger.Key(ctx, os.Stdin, talk, h.log)
		}))
	}
	if g := h.cfg.Conversation.GPIO; g.Chip != "" && g.Line >= 0 {
		out = append(out, part.Func("push-to-talk button", func(ctx context.Context) error {
			err := trigger.GPIO(ctx, trigger.GPIOOptions{Chip: g.Chip, Line: g.Line}, talk, h.log)
			if err != nil && ctx.Err() == nil {
				// Not fatal: exiting would have systemd restart the daemon
				// over and over, and the speaker serves without its button.
				h.log.Error("push-to-talk button unavailable; the speaker runs without it (fix conversation.gpio, or the unit's gpio group and DeviceAllow, then restart)", "err", err)
			}
			return nil
		}))
	}
	return out
}

type talkHandler struct {
	conv *conversation.Conversation
	h    *Host
}

func (t talkHandler) Press() {
	if t.h.talkStopsRinging("the talk button") {
		return
	}
	if _, err := t.conv.TalkStart(); err != nil {
		t.h.log.Warn("push-to-talk: cannot start a turn", "err", err)
	}
}

func (t talkHandler) Release() {
	if t.h.talkSwallowed.CompareAndSwap(true, false) {
		return
	}
	if _, err := t.conv.TalkStop(); err != nil {
		t.h.log.Warn("push-to-talk: cannot end the turn", "err", err)
	}
}
