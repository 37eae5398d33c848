package config

import (
	"time"
)

// Device configures the speaker as a device: its volume, its timers and
// alarms and how they ring (the device services; each can be turned off
// with services.deny, all of them with services.builtins).
type Device struct {
	// Volume is the volume (0–100) at the very first start; after that the
	// one saved in the state folder. VolumeRange is the curve's span: volume
	// 1 is this many dB below volume 100, each step the same size.
	Volume      int `yaml:"volume"`
	VolumeRange int `yaml:"volume_range"`
	// TimeZone is the zone of alarms (an IANA name, Europe/Berlin); "" = the
	// system's.
	TimeZone string `yaml:"time_zone"`
	Ring     Ring   `yaml:"ring"`
	Timers   Timers `yaml:"timers"`
	// MicButton is a GPIO line whose button turns the microphone off and
	// on (the owner's privacy switch). Chip "" or Line -1 means none.
	MicButton GPIO `yaml:"mic_button"`
}

// Ring is how a timer or alarm rings.
type Ring struct {
	// Sound is a WAV file rung over and over; "" = a generated chime.
	Sound string `yaml:"sound"`
	// Floor is the least volume it rings at, even on a muted speaker.
	Floor int `yaml:"floor"`
	// Timeout stops the ringing when nobody does.
	Timeout Duration `yaml:"timeout"`
}

// Timers bounds the timers and alarms.
type Timers struct {
	// Max is the most timers and alarms kept at once.
	Max int `yaml:"max"`
	// Grace: one that came due while the speaker was off rings at start if
	// it is less than this late; otherwise it is reported as missed.
	Grace Duration `yaml:"grace"`
	// TellServer: when one rings (or was missed), tell the voice server with
	// a text turn, at once or when the link is up, so its model can say so.
	TellServer bool `yaml:"tell_server"`
}

func defaultDevice() Device {
	return Device{Volume: 70, VolumeRange: 50, MicButton: GPIO{Line: -1},
		Ring:   Ring{Floor: 60, Timeout: Duration(5 * time.Minute)},
		Timers: Timers{Max: 100, Grace: Duration(10 * time.Minute), TellServer: true}}
}

// The device's hook events: mute (the microphone or the speaker), timer
// and alarm (set aside from the list in config.go, which other parts grow).
func init() { HookEvents = append(HookEvents, "mute", "timer", "alarm") }

// Location is the zone of alarms: device.time_zone, or time.Local.
func (d Device) Location() (*time.Location, error) {
	if d.TimeZone == "" {
		return time.Local, nil
	}
	return time.LoadLocation(d.TimeZone)
}

// device validates the device section and audio.mixer.
func (l *loader) device(c *Config) {
	d := c.Device
	if d.Volume < 0 || d.Volume > 100 {
		l.errorf(path("device.volume"), "%d is not a volume from 0 to 100", d.Volume)
	}
	if d.VolumeRange < 10 || d.VolumeRange > 100 {
		l.errorf(path("device.volume_range"), "%d dB is outside 10–100 dB (50 is usual)", d.VolumeRange)
	}
	if _, err := d.Location(); err != nil {
		l.errorf(path("device.time_zone"), "%q is not a time zone the system knows (a name like Europe/Berlin, see timedatectl list-timezones): %v", d.TimeZone, err)
	}
	if d.Ring.Floor < 0 || d.Ring.Floor > 100 {
		l.errorf(path("device.ring.floor"), "%d is not a volume from 0 to 100", d.Ring.Floor)
	}
	l.positive("device.ring.timeout", d.Ring.Timeout)
	if d.Timers.Max <= 0 || d.Timers.Max > 10000 {
		l.errorf(path("device.timers.max"), "%d must be from 1 to 10000", d.Timers.Max)
	}
	l.positive("device.timers.grace", d.Timers.Grace)
	if b := d.MicButton; b.Line < -1 {
		l.errorf(path("device.mic_button.line"), "%d is not a line number; use 0 or more, or -1 for none", b.Line)
	} else if b.Chip != "" && b.Line < 0 {
		l.errorf(path("device.mic_button.line"), "device.mic_button.chip is set but no line is; give the line number of the button")
	} else if b.Chip != "" && b == c.Conversation.GPIO {
		l.errorf(path("device.mic_button"), "is the push-to-talk button's line too (conversation.gpio); give the microphone button a line of its own")
	}
}
