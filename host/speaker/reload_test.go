package speaker

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
)

// TestAReloadOpensTheDevicesAtTheFormatTheDaemonRunsAt: audio.backend,
// audio.rate and audio.frame apply after a restart (the conversation, the
// echo reference and the wake word run at the rate of the start), so a
// reload that also changes a live audio setting (here audio.echo_room.gain)
// reopens the devices with the new live settings but the backend and rate
// of the start: never a microphone at a rate the conversation does not run
// at.
func TestAReloadOpensTheDevicesAtTheFormatTheDaemonRunsAt(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	cfg.Audio.Backend, cfg.Audio.Rate = "echo_room", 16000
	s, err := New(Options{Config: cfg, Log: slog.New(slog.DiscardHandler), Registry: services.NewRegistry(services.RegistryOptions{}),
		Current: func() *config.Config { return cfg }})
	if err != nil {
		t.Fatal(err)
	}
	next := *cfg
	next.Audio.Rate = 48000 // waits for a restart
	next.Audio.EchoRoom.Gain = -3
	openSource, openSink := s.AudioDevices(next.Audio)
	if openSource == nil || openSink == nil {
		t.Fatal("no devices")
	}
	sink, err := openSink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	if f := s.DeviceFormat(); f.Rate != 16000 {
		t.Errorf("after a reload of audio.rate to 48000 (which waits for a restart), the devices are opened at %d Hz, want the 16000 Hz the daemon runs at", f.Rate)
	}

	next.Audio.Rate, next.Audio.Backend = 16000, "none" // waits for a restart
	if openSource, openSink := s.AudioDevices(next.Audio); openSource == nil || openSink == nil {
		t.Error("after a reload of audio.backend to none (which waits for a restart), the microphone and speaker are gone")
	}
}

// TestTheDeviceStatusNamesTheBackendThatRuns: get_device_status names the
// audio backend the daemon runs with, not one a reload asked for (which
// waits for a restart); the devices it names follow the reload.
func TestTheDeviceStatusNamesTheBackendThatRuns(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	cfg.Audio.Backend, cfg.Audio.InputFile = "file", "a.wav"
	next := *cfg
	next.Audio.Backend, next.Audio.InputFile, next.Audio.Input = "portaudio", "b.wav", "USB"
	s, err := New(Options{Config: cfg, Log: slog.New(slog.DiscardHandler), Registry: services.NewRegistry(services.RegistryOptions{}),
		Current: func() *config.Config { return &next }, Up: func() bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	if i := s.info(); i.Backend != "file" || i.Input != "b.wav" {
		t.Errorf("after a reload of audio.backend to portaudio (which waits for a restart) and audio.input_file to b.wav, the status says backend %q, input %q; want file, b.wav", i.Backend, i.Input)
	}
}
