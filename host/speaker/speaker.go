// Package speaker is the speaker's own hardware as a part of the daemon:
// the device (volume, mutes, timers; host/device) built from the
// configuration and kept in the registry, its buttons (the talk key and
// button, the microphone button), the ring the owner stops, the volume and
// mute on the audio devices, and the owner's endpoints for all of it.
package speaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/hwvolume"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/audiochain"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
)

// Conversation is what the speaker needs of the conversation.
type Conversation interface {
	Event(name string, fields map[string]string)
	Cue(pcm []int16)
	Notify(text string) (string, error)
	RingStopped()
	TalkStart() (string, error)
	TalkStop() (string, error)
}

// Options are what the speaker needs of the rest of the daemon.
type Options struct {
	Config   *config.Config
	Log      *slog.Logger
	Registry *services.Registry
	// Standalone: this process is not the daemon: the device keeps no
	// state, has no mixer and plays nothing (device.Options.Standalone).
	Standalone bool
	// Current is the configuration the daemon runs with now.
	Current func() *config.Config
	// Up reports whether the link to the voice server is up.
	Up func() bool
	// Conversation is the daemon's conversation, nil while there is none.
	Conversation func() Conversation
	// WakeOn reports whether the wake word hears the microphone.
	WakeOn func() bool
}

// Speaker is the device as a part of the daemon.
type Speaker struct {
	o         Options
	dev       *device.Device
	out       *mixer.Mixer           // the one writer to the speaker; nil standalone
	slot      *mixer.Slot            // the speaker device the conversation opened
	swallowed atomic.Bool            // a talk press that stopped a ringing timer: its release is ignored
	share     atomic.Pointer[func()] // tells the household of an owner's stop
	opened    atomic.Pointer[audio.Format]
	key       *keyTrigger // the push-to-talk key; nil without one
}

// New builds the device from the configuration and puts its services in the
// registry with the other built-ins.
func New(o Options) (*Speaker, error) {
	s := &Speaker{o: o}
	cfg := o.Config
	loc, err := cfg.Device.Location()
	if err != nil {
		return nil, fmt.Errorf("device.time_zone: %w", err)
	}
	do := device.Options{
		Volume: cfg.Device.Volume, Range: float64(cfg.Device.VolumeRange),
		Rate: cfg.Audio.Rate, Frame: cfg.Audio.Frame.D(),
		RingFloor: cfg.Device.Ring.Floor, RingTimeout: cfg.Device.Ring.Timeout.D(),
		Location: loc, Grace: cfg.Device.Timers.Grace.D(), MaxTimers: cfg.Device.Timers.Max, TellServer: cfg.Device.Timers.TellServer,
		Log: o.Log,
		Hook: func(event string, fields map[string]string) {
			s.withConv(func(c Conversation) { c.Event(event, fields) })
		},
		Cue: func(pcm []int16) { s.withConv(func(c Conversation) { c.Cue(pcm) }) },
		// The volume is the mixer's (once there is one): a ring on a muted
		// speaker sounds alone.
		Levels: func(ring, others float64) {
			if s.out != nil {
				s.out.SetLevels(ring, others)
			}
		},
		Tell:      s.tellServer,
		Info:      s.info,
		StopSound: s.stopSound,
	}
	if o.Standalone {
		// Not the daemon: no state, no mixer, no sound.
		do.Standalone, do.Levels = true, nil
		if s.dev, err = device.New(do); err != nil {
			return nil, err
		}
		return s, s.put()
	}
	if cfg.Conversation.PushToTalkKey {
		s.key = newKeyTrigger(talkButton{s}, cfg.Server.Params.Mode, o.Log)
	}
	if state := cfg.Plugins.StateDirectory(); state != "" {
		do.StateDir = filepath.Join(state, "device")
	}
	if cfg.Device.Ring.Sound != "" {
		if do.RingSound, err = loadSound(cfg.Device.Ring.Sound, cfg.Audio.Rate); err != nil {
			return nil, fmt.Errorf("device.ring.sound: %w", err)
		}
	}
	if cfg.Audio.Mixer != "" && cfg.Audio.Backend == "portaudio" {
		m, err := hwvolume.Open(cfg.Audio.Mixer, float64(cfg.Device.VolumeRange))
		if err != nil {
			// Not fatal: the gain stage takes the volume instead.
			o.Log.Error("audio.mixer cannot be used; the volume is a gain in the playback path instead", "err", err)
		} else {
			do.Mixer = m
		}
	}
	if s.dev, err = device.New(do); err != nil {
		return nil, err
	}
	// The mixer mixes at the speaker's format (audio.output_rate,
	// audio.output_channels: a restart applies a change).
	rate, channels := cfg.Audio.OutputFormat()
	s.slot = mixer.NewSlotFormat(audio.Format{Rate: rate, Channels: channels})
	mx := cfg.Audio.Mix
	s.out = mixer.New(s.slot, mixer.Options{Rate: rate, Channels: channels, Frame: mixFrame,
		DuckDB: mx.DuckDB, Ramp: mx.Ramp.D(), MediaWhileActive: mx.MediaWhileActive, KeepFed: keepFed(cfg.Audio), Logger: o.Log})
	s.out.SetLevels(s.dev.Levels())
	return s, s.put()
}

// mixFrame is what the mixer writes at a time: short, so that ducking and
// a reply's start are quick.
const mixFrame = 20 * time.Millisecond

// keepFed is the silence the mixer writes while idle: with echo
// cancellation, the reference must go on.
func keepFed(a config.Audio) time.Duration {
	if a.Capture.EchoCancel {
		return a.Mix.KeepFed.D()
	}
	return 0
}

// Output is the speaker's mixer: everything the speaker plays is a stream
// on it (nil when this process is not the daemon). A media source is added
// with Output().Open(name, mixer.Media, format).
func (s *Speaker) Output() *mixer.Mixer { return s.out }

// DeviceFormat is the format the speaker's device was last opened at (a
// sound card that does not take the mixer's is opened at one it does; the
// zero Format before it was opened).
func (s *Speaker) DeviceFormat() audio.Format {
	if f := s.opened.Load(); f != nil {
		return *f
	}
	return audio.Format{}
}

// Attach plugs the speaker device that the conversation opened (the
// AudioDevices sink) into the mixer's output; nil unplugs it.
func (s *Speaker) Attach(sink audio.Sink) {
	if s.slot != nil {
		s.slot.Set(sink)
	}
}

// put puts the device's services in the registry (with the other
// built-ins) and reserves their names.
func (s *Speaker) put() error {
	// The device's names are reserved even with services.builtins off: no
	// other provider may answer for the speaker.
	s.o.Registry.Reserve(s.dev)
	if s.o.Config.Services.Builtins {
		if err := s.o.Registry.Put(s.dev); err != nil {
			return fmt.Errorf("device services: %w", err)
		}
	}
	return nil
}

// Device is the speaker's device.
func (s *Speaker) Device() *device.Device { return s.dev }

// Name implements part.Part.
func (s *Speaker) Name() string { return s.dev.Name() }

// Run implements part.Part: the output mixer, the timers and alarms.
func (s *Speaker) Run(ctx context.Context, ready func()) error {
	if s.out == nil {
		return s.dev.Run(ctx, ready)
	}
	done := make(chan struct{})
	go func() { s.out.Run(ctx); close(done) }()
	defer func() { <-done }()
	return s.dev.Run(ctx, ready)
}

// Live implements part.Live: the mixer's policy applies at once.
func (s *Speaker) Live() []string {
	if s.out == nil {
		return nil
	}
	return []string{"audio.mix"}
}

// Reload follows services.builtins, audio.mix and server.params.mode (the
// push-to-talk key reads the terminal in manual mode only).
func (s *Speaker) Reload(prev, next *config.Config, changed part.Changes) {
	if s.key != nil && changed.Touched("server.params.mode") {
		s.key.setManual(next.Server.Params.Mode == "manual")
	}
	if s.out != nil && changed.Touched("audio.mix") {
		mx := next.Audio.Mix
		if err := s.out.SetPolicy(mx.DuckDB, mx.Ramp.D(), mx.MediaWhileActive); err != nil {
			s.o.Log.Error("audio.mix cannot be applied; the mixer keeps its policy", "err", err)
		}
		s.out.SetKeepFed(keepFed(next.Audio))
	}
	if prev.Services.Builtins == next.Services.Builtins {
		return
	}
	if next.Services.Builtins {
		s.o.Registry.Put(s.dev)
	} else {
		s.o.Registry.Remove(device.ID)
	}
}

func (s *Speaker) conv() Conversation {
	if s.o.Conversation == nil {
		return nil
	}
	return s.o.Conversation()
}

func (s *Speaker) withConv(f func(Conversation)) {
	if c := s.conv(); c != nil {
		f(c)
	}
}

// tellServer tells the voice server something (a timer rang) as a text
// turn; it fails at once while the link is down.
func (s *Speaker) tellServer(text string) error {
	if !s.o.Up() {
		return link.ErrDown
	}
	c := s.conv()
	if c == nil {
		return errors.New("no conversation: the daemon runs without one")
	}
	// Not SayText, which waits for the server's answer to the turn's PING:
	// a notice is fire and forget (a turn that fails is the conversation's
	// to report), and a wait here would hold the daemon's shutdown.
	_, err := c.Notify(text)
	return err
}

// info is the part of get_device_status the rest of the daemon knows.
func (s *Speaker) info() device.Info {
	cfg := s.o.Current()
	// The backend is the start's (a restart applies a change), the devices
	// a reload's.
	backend := s.o.Config.Audio.Backend
	i := device.Info{Link: "down", WakeWord: "off", Backend: backend}
	if s.o.Up() {
		i.Link = "up"
	}
	if s.o.WakeOn != nil && s.o.WakeOn() {
		i.WakeWord = "on"
	}
	switch backend {
	case "portaudio":
		i.Input, i.Output = cfg.Audio.Input, cfg.Audio.Output
	case "file":
		i.Input, i.Output = cfg.Audio.InputFile, cfg.Audio.OutputFile
	}
	return i
}

// AudioDevices opens what the audio section asks for with the device's
// parts on it: the privacy mute at the head of the capture chain, the volume
// in front of the speaker (the echo canceller's tap, when there is one,
// sits below it, next to the device: the gain is part of what the room
// echoes). The speaker it opens is for Attach: the mixer writes to it.
func (s *Speaker) AudioDevices(a config.Audio) (func(context.Context) (audio.Source, error), func(context.Context) (audio.Sink, error)) {
	d := s.dev
	// The backend, the rate and the frame are those of the start (a
	// restart applies a change): the conversation, the echo reference and
	// the wake word run at them, and a reload of a live audio setting
	// reopens the devices at them.
	start := s.o.Config.Audio
	a.Backend, a.Rate, a.Frame = start.Backend, start.Rate, start.Frame
	if s.out != nil {
		s.out.SetKeepFed(keepFed(a))
	}
	// The devices take frames of the mixer's format, which a reload does
	// not change (audio.output_* apply after a restart); without the
	// speaker's mixer the conversation mixes on its own, mono at audio.rate.
	a.OutputRate, a.OutputChannels = a.Rate, 1
	if s.out != nil {
		f := s.out.Format()
		a.OutputRate, a.OutputChannels = f.Rate, f.Channels
	}
	openSource, openSink := audiochain.Devices(a, s.o.Log, d.MicMuted, func(f audio.Format) { s.opened.Store(&f) })
	if openSink != nil {
		open := openSink
		openSink = func(ctx context.Context) (audio.Sink, error) {
			sink, err := open(ctx)
			if err != nil {
				return nil, err
			}
			return d.SinkFormat(sink, audio.Format{Rate: a.OutputRate, Channels: a.OutputChannels}), nil
		}
	}
	return openSource, openSink
}

// StopRinging stops what rings at the owner's word (agenthost stop, the
// talk button, the wake word) and returns it. What the ring left to play
// is not played (the rest of the chime, and the server's answer to the
// notice about it, held back while the chime played): the owner knows,
// and it would talk over the owner's next phrase.
func (s *Speaker) StopRinging(by string) []timers.Entry {
	if share := s.share.Load(); share != nil {
		(*share)() // a ring on another speaker of the household stops too
	}
	return s.StopRingingHere(by)
}

// ShareStops hands every owner's stop of a ring to share: the household
// stops the rings of its other speakers.
func (s *Speaker) ShareStops(share func()) { s.share.Store(&share) }

// StopRingingHere stops what rings on this speaker alone (a stop another
// speaker of the household heard).
func (s *Speaker) StopRingingHere(by string) []timers.Entry {
	if !s.dev.Ringing() {
		return nil
	}
	was := s.dev.StopRinging(by) // first: no chime is queued after
	s.withConv(func(c Conversation) { c.RingStopped() })
	return was
}

// Stop is the owner's stop (agenthost stop, a button's script, the
// device's stop_ringing): it ends the first of what sounds, in this order:
// what rings (all of it), else the plugins' announcements, else their
// music; a next stop ends the next. The talk button and the wake word stop
// only a ring: a turn ducks (or pauses) announcements and music, which
// come back after it.
func (s *Speaker) Stop(why string) device.Stopped {
	if was := s.StopRinging(why); len(was) > 0 {
		return device.StoppedRing(was)
	}
	return s.stopSound(why)
}

// stopSound ends the plugins' announcements, else their music (the
// mixer's streams of the class: their plugin is told why).
func (s *Speaker) stopSound(why string) device.Stopped {
	if s.out == nil {
		return device.Stopped{}
	}
	for _, c := range []mixer.Class{mixer.Announcement, mixer.Media} {
		if names := s.out.StopClass(c, why); len(names) > 0 {
			return device.Stopped{What: c.String(), Names: names}
		}
	}
	return device.Stopped{}
}

// talkStopsRinging: the talk button first stops a ringing timer (and the
// press does nothing else). It reports whether it did.
func (s *Speaker) talkStopsRinging(what string) bool {
	if len(s.StopRinging(what)) == 0 {
		return false
	}
	s.swallowed.Store(true)
	return true
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
