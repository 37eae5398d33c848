package config

import (
	"strings"
	"testing"
	"time"
)

func TestMixSettingsAreCheckedStrictly(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Audio.Mix; m.DuckDB != -20 || m.Ramp.D() != 20*time.Millisecond || m.MediaWhileActive != "duck" || m.KeepFed.D() != 20*time.Millisecond {
		t.Fatalf("defaults %+v", m)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"audio.mix.duck_db", "5", "audio.mix.duck_db: 5 dB is outside -60…-1 dB"},
		{"audio.mix.ramp", "0s", "audio.mix.ramp: 0s is outside 1ms…1s"},
		{"audio.mix.media_while_active", "stop", `audio.mix.media_while_active: "stop": use duck or pause`},
		{"audio.mix.keep_fed", "1s", "audio.mix.keep_fed: 1s is outside 10ms…200ms"},
		{"audio.mix.duck", "-10", "duck"},
	} {
		_, err := Load("", map[string]any{tc.key: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	c, err = Load("", map[string]any{"audio.mix.media_while_active": "pause", "audio.mix.duck_db": "-30"})
	if err != nil || c.Audio.Mix.MediaWhileActive != "pause" || c.Audio.Mix.DuckDB != -30 {
		t.Fatalf("%v %+v", err, c.Audio.Mix)
	}
}

func TestOutputFormatIsStereo48kHzForASoundCardAndCheckedStrictly(t *testing.T) {
	for _, tc := range []struct {
		sets           map[string]any
		rate, channels int
	}{
		{nil, 48000, 2},
		{map[string]any{"audio.output_rate": "44100", "audio.output_channels": "1"}, 44100, 1},
		{map[string]any{"audio.backend": "file", "audio.output_file": "/tmp/x.wav"}, 16000, 1},
		{map[string]any{"audio.backend": "file", "audio.output_file": "/tmp/x.wav", "audio.output_rate": "48000", "audio.output_channels": "2"}, 48000, 2},
		{map[string]any{"audio.backend": "echo_room"}, 16000, 1},
	} {
		c, err := Load("", tc.sets)
		if err != nil {
			t.Fatal(err)
		}
		if r, ch := c.Audio.OutputFormat(); r != tc.rate || ch != tc.channels {
			t.Errorf("%v: the output is %d Hz × %d ch; want %d × %d", tc.sets, r, ch, tc.rate, tc.channels)
		}
	}
	for _, tc := range []struct{ key, value, want string }{
		{"audio.output_rate", "4000", "audio.output_rate: 4000 is outside 8000…192000 Hz"},
		{"audio.output_channels", "6", "audio.output_channels: 6: use 1 (mono), 2 (stereo)"},
		{"audio.output_channels", "-1", "audio.output_channels: -1: use 1"},
	} {
		_, err := Load("", map[string]any{tc.key: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
}
