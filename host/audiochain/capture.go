package audiochain

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/capture"
	"github.com/agenthost/agenthost/audio/echoroom"
	"github.com/agenthost/agenthost/config"
)

// withCapture puts the capture stages audio.capture asks for between the
// microphone and the conversation, after the privacy mute when muted is
// set (nothing after the mute, a wake-word detector included, hears a muted
// room), and taps the speaker (frames of of) for the echo canceller's
// reference, mono at audio.rate. Either opener may be nil.
func withCapture(a config.Audio, of audio.Format, log *slog.Logger, muted func() bool, openSource func(context.Context) (audio.Source, error), openSink func(context.Context) (audio.Sink, error)) (func(context.Context) (audio.Source, error), func(context.Context) (audio.Sink, error)) {
	cp := a.Capture
	configured := cp.EchoCancel || cp.NoiseSuppression || cp.Gain != 0
	if openSource == nil || (!configured && muted == nil) {
		return openSource, openSink
	}
	var ref *capture.Reference
	if cp.EchoCancel && openSink != nil {
		ref = capture.NewReference(a.Rate)
		inner := openSink
		openSink = func(ctx context.Context) (audio.Sink, error) {
			sink, err := inner(ctx)
			if err != nil {
				return nil, err
			}
			// The tap sits next to the device: a volume gain added later
			// goes outside it, since it is part of what the room echoes.
			// The mixer in front keeps it fed (audio.mix.keep_fed).
			tap, err := capture.TapSinkFormat(sink, ref, of, 0)
			if err != nil {
				sink.Close()
				return nil, fmt.Errorf("audio.capture.echo_cancel: %w", err)
			}
			return tap, nil
		}
	}
	innerSrc := openSource
	openSource = func(ctx context.Context) (audio.Source, error) {
		stages, err := captureStages(a, ref, log)
		if err != nil {
			return nil, err
		}
		if muted != nil {
			stages = append([]capture.Stage{capture.NewMute(muted)}, stages...)
		}
		src, err := innerSrc(ctx)
		if err != nil {
			closeStages(stages)
			return nil, err
		}
		chain, err := capture.NewChain(src, a.Rate, stages...)
		if err != nil && !configured {
			// Only the mute asked for a chain: it is enforced where
			// frames are sent (conversation.Options.MicMuted) instead.
			closeStages(stages)
			log.Warn("no capture chain: the microphone's mute is enforced where frames are sent only", "component", "capture", "err", err)
			return src, nil
		}
		if err != nil {
			src.Close()
			closeStages(stages)
			return nil, fmt.Errorf("audio.capture: %w", err)
		}
		names := make([]string, len(stages))
		for i, s := range stages {
			names[i] = s.Name()
		}
		log.Info("microphone capture stages", "component", "capture", "stages", strings.Join(names, ","))
		return chain, nil
	}
	return openSource, openSink
}

// captureStages builds the configured stages in their order.
func captureStages(a config.Audio, ref *capture.Reference, log *slog.Logger) ([]capture.Stage, error) {
	cp := a.Capture
	var stages []capture.Stage
	if cp.EchoCancel {
		if ref == nil {
			return nil, fmt.Errorf("audio.capture.echo_cancel: there is no speaker to take the reference from")
		}
		e, err := capture.NewEcho(ref, capture.EchoOptions{Rate: a.Rate, Tail: cp.EchoTail.D(), MaxDelay: cp.EchoDelaySearch.D(), Log: log})
		if err != nil {
			return nil, fmt.Errorf("audio.capture: %w", err)
		}
		stages = append(stages, e)
	}
	if cp.NoiseSuppression {
		d, err := capture.NewDenoise(a.Rate, cp.NoiseLevel)
		if err != nil {
			closeStages(stages)
			return nil, fmt.Errorf("audio.capture: %w", err)
		}
		stages = append(stages, d)
	}
	if cp.Gain != 0 {
		g, err := capture.NewGain(cp.Gain)
		if err != nil {
			closeStages(stages)
			return nil, fmt.Errorf("audio.capture: %w", err)
		}
		stages = append(stages, g)
	}
	return stages, nil
}

func closeStages(stages []capture.Stage) {
	for _, s := range stages {
		s.Close()
	}
}

// echoRoomDevices opens the echo_room backend: one simulated room whose
// speaker and microphone are the two devices. The room is mono at
// audio.rate; a speaker of another format of is converted to it.
func echoRoomDevices(a config.Audio, of audio.Format, opened func(audio.Format)) (func(context.Context) (audio.Source, error), func(context.Context) (audio.Sink, error)) {
	var room *echoroom.Live
	var roomErr error
	open := func() (*echoroom.Live, error) {
		if room != nil || roomErr != nil {
			return room, roomErr
		}
		r := a.EchoRoom
		s := echoroom.Script{SpeechAt: r.SpeechAt.D(), SpeechEvery: r.SpeechEvery.D(), InterruptAfter: r.InterruptAfter.D()}
		if s.Speech, roomErr = loadClip(r.Speech, a.Rate); roomErr != nil {
			roomErr = fmt.Errorf("audio.echo_room.speech: %w", roomErr)
			return nil, roomErr
		}
		if s.Interrupt, roomErr = loadClip(r.Interrupt, a.Rate); roomErr != nil {
			roomErr = fmt.Errorf("audio.echo_room.interrupt: %w", roomErr)
			return nil, roomErr
		}
		room, roomErr = echoroom.NewLive(echoroom.Room{Rate: a.Rate, Delay: r.Delay.D(), Gain: r.Gain, Reverb: r.Reverb.D(), Clip: r.Clip, Noise: r.Noise, Seed: 1}, s)
		if roomErr != nil {
			roomErr = fmt.Errorf("audio.echo_room: %w", roomErr)
		}
		return room, roomErr
	}
	var mu sync.Mutex
	get := func() (*echoroom.Live, error) {
		mu.Lock()
		defer mu.Unlock()
		return open()
	}
	return func(context.Context) (audio.Source, error) {
			l, err := get()
			if err != nil {
				return nil, err
			}
			return l.Source(), nil
		}, func(context.Context) (audio.Sink, error) {
			l, err := get()
			if err != nil {
				return nil, err
			}
			room := audio.Format{Rate: a.Rate, Channels: 1}
			sink, err := audio.ConvertSink(l.Sink(), of, room)
			if err != nil {
				return nil, fmt.Errorf("audio.echo_room: %w", err)
			}
			opened(room)
			return sink, nil
		}
}

// maxClip bounds a scripted near-end clip.
const maxClip = time.Minute

// loadClip reads a whole WAV or raw file at rate; "" is none.
func loadClip(path string, rate int) ([]int16, error) {
	if path == "" {
		return nil, nil
	}
	return audio.LoadFile(path, rate, maxClip)
}
