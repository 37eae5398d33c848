package config

import (
	"strings"
	"testing"
)

// TestDeviceSettings: the device section's bounds are checked, each named
// with its key; its hook events are accepted.
func TestDeviceSettings(t *testing.T) {
	clearEnv(t)
	_, err := Load("", map[string]any{
		"device.volume": "101", "device.volume_range": "5", "device.time_zone": "Mars/Olympus",
		"device.mic_button.chip": "gpiochip0", "device.ring.floor": "-1", "device.ring.timeout": "0s", "device.timers.max": "0", "device.timers.grace": "0s",
	})
	got := strings.Join(problems(t, err), "\n")
	for _, want := range []string{
		"device.volume: 101 is not a volume from 0 to 100",
		"device.volume_range: 5 dB is outside 10–100 dB",
		`device.time_zone: "Mars/Olympus" is not a time zone the system knows`,
		"device.ring.floor: -1 is not a volume",
		"device.ring.timeout: 0s must be more than 0",
		"device.timers.max: 0 must be from 1 to 10000",
		"device.timers.grace: 0s must be more than 0",
		"device.mic_button.line: device.mic_button.chip is set but no line is",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no problem %q in:\n%s", want, got)
		}
	}
	c := mustLoad(t, "", map[string]any{"conversation.hooks.mute": "true", "conversation.hooks.timer": "true",
		"conversation.hooks.alarm": "true", "device.time_zone": "Europe/Berlin", "audio.mixer": "hw:1/Speaker"})
	if loc, err := c.Device.Location(); err != nil || loc.String() != "Europe/Berlin" || c.Audio.Mixer != "hw:1/Speaker" {
		t.Fatalf("%v %v %q", loc, err, c.Audio.Mixer)
	}
}
