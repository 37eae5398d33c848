// Package audiochain opens the microphone and the speaker that the audio
// section asks for (audio.backend: portaudio, file, echo_room), with the
// capture chain audio.capture asks for between the microphone and the
// conversation, after the privacy mute.
package audiochain

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/backoff"
)

// Devices returns the openers of the microphone and the speaker that the
// audio section asks for, the capture chain on the microphone (behind the
// mute when muted is set); either may be nil.
func Devices(a config.Audio, log *slog.Logger, muted func() bool) (openSource func(context.Context) (audio.Source, error), openSink func(context.Context) (audio.Sink, error)) {
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
