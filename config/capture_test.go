package config

import (
	"strings"
	"testing"
)

func TestCaptureSettings(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, writeConfig(t, "audio:\n  backend: echo_room\n  capture: {echo_cancel: true, noise_suppression: true, noise_level: -30, gain: 3.5}\n  echo_room: {delay: 120ms, gain: -6.5, clip: 0.4, interrupt: stop.wav}\n"), nil)
	cp, r := c.Audio.Capture, c.Audio.EchoRoom
	if !cp.EchoCancel || !cp.NoiseSuppression || cp.NoiseLevel != -30 || cp.Gain != 3.5 || cp.EchoTail.D().Milliseconds() != 200 {
		t.Errorf("capture = %+v", cp)
	}
	if r.Delay.D().Milliseconds() != 120 || r.Gain != -6.5 || r.Clip != 0.4 || r.Interrupt != "stop.wav" || r.Noise != -65 {
		t.Errorf("echo_room = %+v", r)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"audio:\n  capture: {echo_tail: 5ms}\n", "audio.capture.echo_tail: 5ms is outside 20ms…500ms"},
		{"audio:\n  capture: {echo_delay_search: 2s}\n", "audio.capture.echo_delay_search: 2s is outside"},
		{"audio:\n  capture: {noise_level: 10}\n", "audio.capture.noise_level: 10 dB is outside -60…-1 dB"},
		{"audio:\n  capture: {gain: loud}\n", "audio.capture.gain: \"loud\" is not a number"},
		{"audio:\n  capture: {gain: 40}\n", "audio.capture.gain: 40 dB is outside -30…30 dB"},
		{"audio:\n  echo_room: {delay: 1s}\n", "audio.echo_room.delay: 1s is outside 0…500ms"},
		{"audio:\n  echo_room: {clip: 2}\n", "audio.echo_room.clip: 2 is outside 0…1"},
		{"audio:\n  echo_room: {noise: 3}\n", "audio.echo_room.noise: 3 dBFS must be 0 (none) or below"},
		{"audio:\n  echo_room: {gain: -90}\n", "audio.echo_room.gain: -90 dB is outside -60…6 dB"},
		{"audio:\n  echo_room: {interrupt_after: -1s}\n", "audio.echo_room.interrupt_after: -1s must not be negative"},
		{"audio:\n  echo_room: {delay_ms: 3}\n", "audio.echo_room.delay_ms"},
	} {
		_, err := Load(writeConfig(t, tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestAECWithoutTheCancellerWarns(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, writeConfig(t, "conversation:\n  aec: true\n"), nil)
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "audio.capture.echo_cancel is off") {
		t.Errorf("warnings = %q", c.Warnings)
	}
	c = mustLoad(t, writeConfig(t, "conversation:\n  aec: true\naudio:\n  capture:\n    echo_cancel: true\n"), nil)
	if len(c.Warnings) != 0 {
		t.Errorf("warnings = %q", c.Warnings)
	}
}
