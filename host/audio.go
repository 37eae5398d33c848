package host

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/internal/backoff"
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
	o.OpenSource, o.OpenSink = h.audioDevices(a)
	o.MicMuted, o.Withheld = h.device.MicMuted, h.device.Withheld
	c, err := conversation.New(o, h.link)
	if err != nil {
		return nil, err
	}
	h.conv = c
	return c, nil
}

// devices returns the openers of the microphone and the speaker that the
// audio section asks for; either may be nil.
func devices(a config.Audio, log *slog.Logger, muted func() bool) (openSource func(context.Context) (audio.Source, error), openSink func(context.Context) (audio.Sink, error)) {
	ao := audio.Options{Rate: a.Rate, Retry: backoff.Backoff{Base: a.Retry.Base.D(), Cap: a.Retry.Cap.D()}, Logger: log}
	switch a.Backend {
	case "portaudio":
		openSource = func(ctx context.Context) (audio.Source, error) {
			in := ao
			in.Device = a.Input
			in.Buffer = a.Frame.D() // one device read, and one wake-up, per frame sent
			src, err := audio.OpenPortAudioSource(ctx, in)
			if err != nil || !a.Pace {
				return src, err
			}
			return audio.Paced(src, a.Rate), nil
		}
		openSink = func(ctx context.Context) (audio.Sink, error) {
			out := ao
			out.Device = a.Output
			sink, err := audio.OpenPortAudioSink(ctx, out)
			if err != nil || !a.Pace {
				return sink, err
			}
			return audio.PacedSink(sink, a.Rate), nil
		}
	case "echo_room":
		openSource, openSink = echoRoomDevices(a)
	case "file":
		if a.InputFile != "" {
			openSource = func(context.Context) (audio.Source, error) {
				in := ao
				in.Loop = true // a looping file stands in for a microphone
				src, err := audio.OpenFileSource(a.InputFile, in)
				if err != nil {
					return nil, fmt.Errorf("audio.input_file: %w", err)
				}
				return audio.Paced(src, a.Rate), nil
			}
		}
		if a.OutputFile != "" {
			openSink = func(context.Context) (audio.Sink, error) {
				sink, err := audio.CreateWAVSink(a.OutputFile, a.Rate)
				if err != nil {
					return nil, fmt.Errorf("audio.output_file: %w", err)
				}
				return audio.PacedSink(sink, a.Rate), nil
			}
		}
	}
	return withCapture(a, log, muted, openSource, openSink)
}
