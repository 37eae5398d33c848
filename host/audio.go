package host

import (
	"github.com/agenthost/agenthost/host/conversation"
)

// Conversation returns the conversation built from the configuration: the
// microphone and speaker of audio.backend, and the turn mode of
// server.params.mode. Add it to run it.
func (h *Host) Conversation() (*conversation.Conversation, error) {
	if h.conv != nil {
		return h.conv, nil
	}
	a, p := h.cfg.Audio, h.cfg.Server.Params
	o := conversation.Options{
		Mode: p.Mode, AEC: h.cfg.Conversation.AEC, Rate: a.Rate, Frame: a.Frame.D(),
		JitterLead: h.cfg.Conversation.JitterLead.D(), ReplyTimeout: h.cfg.Conversation.ReplyTimeout.D(), InputOpus: p.InputAudioFormat == "opus", OutputOpus: p.Format == "opus",
		Hooks: h.cfg.Conversation.Hooks, Log: h.log,
		EarconStart: h.cfg.Conversation.Earcons.ListenStart, EarconEnd: h.cfg.Conversation.Earcons.ListenEnd,
		EarconUnreachable: h.cfg.Conversation.Earcons.Unreachable,
		Attend: func(why string) (<-chan error, func()) {
			a := h.link.Attend(why)
			return a.Answer(), a.Release
		},
		Wake: h.wakeOptions(),
	}
	o.OpenSource, o.OpenSink = h.speaker.AudioDevices(a)
	o.MicMuted, o.Withheld = h.speaker.Device().MicMuted, h.speaker.Device().Withheld
	c, err := conversation.New(o, h.link)
	if err != nil {
		return nil, err
	}
	h.conv = c
	return c, nil
}
