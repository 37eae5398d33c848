// Package audiochain opens the microphone and the speaker that the audio
// section asks for (audio.backend: portaudio, file, echo_room), with the
// capture chain audio.capture asks for between the microphone and the
// conversation, after the privacy mute. The speaker takes frames of the
// output's format (config.Audio.OutputFormat), which the output mixer
// mixes at.
package audiochain

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/backoff"
)

// Devices returns the openers of the microphone and the speaker that the
// audio section asks for, the capture chain on the microphone (behind the
// mute when muted is set); either may be nil. The speaker takes frames of
// the output's format; opened, when set, is told the format the device
// itself was opened at (a sound card that takes not the output's, the
// echo room's), each time it is.
func Devices(a config.Audio, log *slog.Logger, muted func() bool, opened func(audio.Format)) (openSource func(context.Context) (audio.Source, error), openSink func(context.Context) (audio.Sink, error)) {
	ao := audio.Options{Rate: a.Rate, Retry: backoff.Backoff{Base: a.Retry.Base.D(), Cap: a.Retry.Cap.D()}, Logger: log}
	rate, channels := a.OutputFormat()
	of := audio.Format{Rate: rate, Channels: channels}
	if opened == nil {
		opened = func(audio.Format) {}
	}
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
			out.Rate, out.Channels = of.Rate, of.Channels
			out.OnOpen = func(_ audio.Device, f audio.Format) { opened(f) }
			sink, err := audio.OpenPortAudioSink(ctx, out)
			if err != nil || !a.Pace {
				return sink, err
			}
			return audio.PacedSink(sink, of.Rate*of.Channels), nil
		}
	case "echo_room":
		openSource, openSink = echoRoomDevices(a, of, opened)
	case "file":
		if a.InputFile != "" {
			openSource = func(context.Context) (audio.Source, error) {
				in := ao
				in.Loop = true // a looping file stands in for a microphone
				src, err := audio.OpenFileSource(a.InputFile, in)
				if err != nil {
					return nil, fmt.Errorf("audio.input_file: %w", err)
				}
				if fi, err := os.Stat(a.InputFile); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
					return src, nil // a pipe's writer sets the pace
				}
				return audio.Paced(src, a.Rate), nil
			}
		}
		if a.OutputFile != "" {
			openSink = func(context.Context) (audio.Sink, error) {
				sink, err := audio.CreateWAVSinkFormat(a.OutputFile, of)
				if err != nil {
					return nil, fmt.Errorf("audio.output_file: %w", err)
				}
				opened(of)
				return audio.PacedSink(sink, of.Rate*of.Channels), nil
			}
		}
	}
	return withCapture(a, of, log, muted, openSource, openSink)
}
