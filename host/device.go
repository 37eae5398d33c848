package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/audiochain"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/trigger"
)

// newDevice builds the speaker's device services from the configuration
// (volume, mutes, timers; package device) and puts them in the registry
// with the other built-ins.
func (h *Host) newDevice() error {
	cfg := h.cfg
	loc, err := cfg.Device.Location()
	if err != nil {
		return fmt.Errorf("device.time_zone: %w", err)
	}
	o := device.Options{
		Volume: cfg.Device.Volume, Range: float64(cfg.Device.VolumeRange),
		Rate: cfg.Audio.Rate, Frame: cfg.Audio.Frame.D(),
		RingFloor: cfg.Device.Ring.Floor, RingTimeout: cfg.Device.Ring.Timeout.D(),
		Location: loc, Grace: cfg.Device.Timers.Grace.D(), MaxTimers: cfg.Device.Timers.Max, TellServer: cfg.Device.Timers.TellServer,
		Log:  h.log,
		Hook: func(event string, fields map[string]string) { h.withConv(func(c convHooks) { c.Event(event, fields) }) },
		Cue:  func(pcm []int16) { h.withConv(func(c convHooks) { c.Cue(pcm) }) },
		Tell: h.tellServer,
		Info: h.deviceInfo,
	}
	if h.standalone {
		// Not the daemon: no state, no mixer, no sound (see NewStandalone).
		o.Standalone = true
		if h.device, err = device.New(o); err != nil {
			return err
		}
		return h.putDevice()
	}
	if state := cfg.Plugins.StateDirectory(); state != "" {
		o.StateDir = filepath.Join(state, "device")
	}
	if cfg.Device.Ring.Sound != "" {
		if o.RingSound, err = loadSound(cfg.Device.Ring.Sound, cfg.Audio.Rate); err != nil {
			return fmt.Errorf("device.ring.sound: %w", err)
		}
	}
	if cfg.Audio.Mixer != "" && cfg.Audio.Backend == "portaudio" {
		m, err := mixer.Open(cfg.Audio.Mixer, float64(cfg.Device.VolumeRange))
		if err != nil {
			// Not fatal: the gain stage takes the volume instead.
			h.log.Error("audio.mixer cannot be used; the volume is a gain in the playback path instead", "err", err)
		} else {
			o.Mixer = m
		}
	}
	if h.device, err = device.New(o); err != nil {
		return err
	}
	return h.putDevice()
}

// putDevice puts the device's services in the registry (with the other
// built-ins) and reserves their names.
func (h *Host) putDevice() error {
	// The device's names are reserved even with services.builtins off: no
	// other provider may answer for the speaker.
	h.reg.Reserve(h.device)
	if h.cfg.Services.Builtins {
		if err := h.reg.Put(h.device); err != nil {
			return fmt.Errorf("device services: %w", err)
		}
	}
	return nil
}

// Device is the component that runs the timers; add it to run them.
func (h *Host) Device() Component { return h.device }

// MicButton returns the component of the microphone's privacy button
// (device.mic_button), or nil when none is configured: each press turns the
// microphone off, or back on, as the owner.
func (h *Host) MicButton() Component {
	g := h.cfg.Device.MicButton
	if g.Chip == "" || g.Line < 0 {
		return nil
	}
	return part.Func("microphone button", func(ctx context.Context) error {
		err := trigger.GPIO(ctx, trigger.GPIOOptions{Chip: g.Chip, Line: g.Line}, micButton{h}, h.log)
		if err != nil && ctx.Err() == nil {
			h.log.Error("the microphone button is unavailable; the speaker runs without it (fix device.mic_button, or the unit's gpio group and DeviceAllow, then restart)", "err", err)
		}
		return nil
	})
}

// micButton toggles the microphone's privacy mute; the button is the owner's.
type micButton struct{ h *Host }

func (b micButton) Press() {
	d := b.h.device
	if err := d.SetMicMuted(services.CallerOwner, !d.MicMuted()); err != nil {
		b.h.log.Warn("microphone button", "err", err)
	}
}

func (micButton) Release() {}

// convHooks is what the device needs of the conversation.
type convHooks interface {
	Event(name string, fields map[string]string)
	Cue(pcm []int16)
}

func (h *Host) withConv(f func(convHooks)) {
	if h.conv != nil {
		f(h.conv)
	}
}

// tellServer tells the voice server something (a timer rang) as a text
// turn; it fails at once while the link is down.
func (h *Host) tellServer(text string) error {
	if up, _ := h.link.Up(); !up {
		return link.ErrDown
	}
	if h.conv == nil {
		return errors.New("no conversation: the daemon runs without one")
	}
	// Not SayText, which waits for the server's answer to the turn's PING:
	// a notice is fire and forget (a turn that fails is the conversation's
	// to report), and a wait here would hold the daemon's shutdown.
	_, err := h.conv.Notify(text)
	return err
}

// deviceInfo is the part of get_device_status the host knows.
func (h *Host) deviceInfo() device.Info {
	cfg := h.Config()
	i := device.Info{Link: "down", WakeWord: "off", Backend: cfg.Audio.Backend}
	if up, _ := h.link.Up(); up {
		i.Link = "up"
	}
	if h.wakeStatus().On {
		i.WakeWord = "on"
	}
	switch cfg.Audio.Backend {
	case "portaudio":
		i.Input, i.Output = cfg.Audio.Input, cfg.Audio.Output
	case "file":
		i.Input, i.Output = cfg.Audio.InputFile, cfg.Audio.OutputFile
	}
	return i
}

// audioDevices opens what the audio section asks for with the device's
// parts on it: the privacy mute at the head of the capture chain, the volume
// in front of the speaker (the echo canceller's tap, when there is one,
// sits below it, next to the device: the gain is part of what the room
// echoes).
func (h *Host) audioDevices(a config.Audio) (func(context.Context) (audio.Source, error), func(context.Context) (audio.Sink, error)) {
	d := h.device
	openSource, openSink := audiochain.Devices(a, h.log, d.MicMuted)
	if openSink != nil {
		open := openSink
		openSink = func(ctx context.Context) (audio.Sink, error) {
			sink, err := open(ctx)
			if err != nil {
				return nil, err
			}
			return d.Sink(sink), nil
		}
	}
	return openSource, openSink
}

// talkStopsRinging: the talk button first stops a ringing timer (and the
// press does nothing else). It reports whether it did.
func (h *Host) talkStopsRinging(what string) bool {
	if len(h.ownerStopsRinging(what)) == 0 {
		return false
	}
	h.talkSwallowed.Store(true)
	return true
}

// ownerStopsRinging stops what rings at the owner's word (agenthost stop,
// the talk button, the wake word) and returns it. What the ring left to
// play is not played (the rest of the chime, and the server's answer to
// the notice about it, held back while the chime played): the owner
// knows, and it would talk over the owner's next phrase.
func (h *Host) ownerStopsRinging(why string) []timers.Entry {
	if h.device == nil || !h.device.Ringing() {
		return nil
	}
	was := h.device.StopRinging(why) // first: no chime is queued after
	if h.conv != nil {
		h.conv.RingStopped()
	}
	return was
}

// applyDevice follows services.builtins in a reload.
func (h *Host) applyDevice(prev, next *config.Config) {
	if h.device == nil || prev.Services.Builtins == next.Services.Builtins {
		return
	}
	if next.Services.Builtins {
		h.reg.Put(h.device)
	} else {
		h.reg.Remove(device.ID)
	}
}

// loadSound reads a whole WAV (or raw) file as mono samples at rate, at
// most 30 seconds: a ring sound is rung over and over.
func loadSound(path string, rate int) ([]int16, error) {
	pcm, err := audio.LoadFile(path, rate, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if len(pcm) == 0 {
		return nil, fmt.Errorf("%s holds no sound", path)
	}
	return pcm, nil
}

// VolumeRequest is the body of POST /v1/device/volume: Volume (0–100),
// or Step, or Mute (true/false).
type VolumeRequest struct {
	Volume *int  `json:"volume,omitempty"`
	Step   *int  `json:"step,omitempty"`
	Mute   *bool `json:"mute,omitempty"`
}

// MicRequest is the body of POST /v1/device/mic.
type MicRequest struct {
	On bool `json:"on"`
}

// addDeviceEndpoints adds the owner's endpoints for the device (the CLI's
// volume, mic, timers, stop). They call the device directly, as the owner,
// so that services.deny never locks the owner out.
func (h *Host) addDeviceEndpoints(s *control.Server) {
	control.HandleJSON(s, "GET /v1/device", func(context.Context, struct{}) (any, error) { return h.device.Status(), nil })
	control.HandleJSON(s, "POST /v1/device/volume", func(_ context.Context, in VolumeRequest) (any, error) {
		var err error
		switch {
		case in.Volume != nil && (*in.Volume < 0 || *in.Volume > 100):
			return nil, fmt.Errorf("volume %d is outside 0–100", *in.Volume)
		case in.Volume != nil:
			_, err = h.device.SetVolume(*in.Volume, false)
		case in.Step != nil:
			_, err = h.device.SetVolume(*in.Step, true)
		case in.Mute != nil:
			err = h.device.MuteSpeaker(*in.Mute)
		}
		if err != nil && !errors.Is(err, device.ErrNotSaved) {
			return nil, err
		}
		return h.device.Status(), nil
	})
	control.HandleJSON(s, "POST /v1/device/mic", func(_ context.Context, in MicRequest) (any, error) {
		if err := h.device.SetMicMuted(services.CallerOwner, !in.On); err != nil && !errors.Is(err, device.ErrNotSaved) {
			return nil, err
		}
		return h.device.Status(), nil
	})
	control.HandleJSON(s, "GET /v1/device/timers", func(context.Context, struct{}) (any, error) { return h.device.TimersList(), nil })
	control.HandleJSON(s, "POST /v1/device/stop", func(context.Context, struct{}) (any, error) {
		was := h.ownerStopsRinging("the owner (agenthost stop)")
		return map[string]int{"stopped": len(was)}, nil
	})
}
