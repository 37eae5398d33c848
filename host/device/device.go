// Package device owns the speaker as a device: its volume (a gain stage in
// the playback path, or a hardware mixer control), the speaker's mute, the
// microphone's privacy mute, its status, and its timers and alarms (package
// device/timers), which ring locally even when the link is down. It offers
// them as built-in services (a services.Provider with ID "device") that
// the voice server's model, MCP clients and the owner may call, and keeps
// what it must remember in the state folder.
//
// It knows who calls (services.CallerOf): the voice server and MCP clients
// may mute the microphone but never turn it back on; only the owner can
// (the control socket: `agenthost mic on`, a button script).
//
// The host connects it: Sink wraps the speaker, MicMuted gates the
// microphone, and the Options' functions reach the conversation (cues,
// hooks) and the link (telling the server that a timer rang).
package device

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/statefile"
)

// ID is the provider ID of the device's services.
const ID = "device"

// Mixer is a hardware volume control (an ALSA mixer element).
type Mixer interface {
	// SetVolume sets level (0–100) on the device's curve; 0 is silence.
	SetVolume(level int) error
	String() string
	Close() error
}

// Options configure a Device. Zero values take the defaults.
type Options struct {
	// StateDir is the folder of the device's state files ("" keeps
	// everything in memory and says so).
	StateDir string
	// Volume is the volume at the first start (later, the saved one);
	// default 70. Range is the curve's span in dB (DefaultRange).
	Volume int
	Range  float64
	// Mixer, when set, takes the volume instead of the gain stage (the
	// gain stage then only mutes).
	Mixer Mixer
	// Rate and Frame are the playback's: a volume change is ramped over a
	// frame.
	Rate  int
	Frame time.Duration

	// RingSound is what a timer rings with (nil: a generated chime), played
	// again and again; RingFloor the least volume it rings at, even on a
	// muted speaker (default 60); RingTimeout how long it rings unless
	// stopped (default 5 minutes).
	RingSound   []int16
	RingFloor   int
	RingTimeout time.Duration

	// Timers: see timers.Options.
	Location  *time.Location
	Grace     time.Duration
	MaxTimers int
	// TellServer: when a timer rings (or was missed), a TEXT turn tells the
	// voice server, once the link is up, so its model can say so.
	TellServer bool

	Now func() time.Time
	Log *slog.Logger

	// The host's parts. Any may be nil.
	// Hook runs a configured event hook (conversation.hooks).
	Hook func(event string, fields map[string]string)
	// Cue plays a sound on the speaker ahead of any reply.
	Cue func(pcm []int16)
	// Levels, when set, takes the volume from the gain stage (which then
	// stays at 1; a hardware Mixer still takes the level): it is told the
	// gain of the ring's sound and of every other sound, which the output
	// mixer applies to each stream. So a ring on a muted speaker sounds
	// alone, and one that raises a low volume to RingFloor raises only
	// itself. It is called with the device's lock held: it must not call
	// the device.
	Levels func(ring, others float64)
	// Tell sends text to the voice server as a turn; it fails while the
	// link is down.
	Tell func(text string) error
	// Info reports the rest of the device's status.
	Info func() Info
	// Temperature reads the board's temperature (ok false: none).
	Temperature func() (celsius float64, ok bool)
	// StopSound ends the next sound in the owner's stop order after a ring
	// (the announcements, else the music: see Stopped) when stop_ringing
	// finds nothing ringing; nil: none.
	StopSound func(why string) Stopped

	// Standalone: this process is not the daemon, which alone keeps the
	// speaker's state. Nothing is read or written (StateDir and Mixer are
	// ignored) and every service answers ErrNoDaemon: another process
	// cannot enforce a mute or ring a timer.
	Standalone bool
}

// ErrNoDaemon is the answer of a standalone device's services.
var ErrNoDaemon = errors.New("the speaker's daemon is not running")

// Info is what the host knows of the device for get_device_status.
type Info struct {
	Link     string `json:"link"`      // "up" or "down"
	WakeWord string `json:"wake_word"` // "on" or "off"
	Backend  string `json:"audio_backend"`
	Input    string `json:"input,omitempty"`
	Output   string `json:"output,omitempty"`
}

// Device is the speaker as a device.
type Device struct {
	o     Options
	log   *slog.Logger
	start time.Time
	sched *timers.Scheduler
	chime []int16

	gain     atomic.Uint64 // math.Float64bits of the gain stage's target
	micMuted atomic.Bool
	withheld atomic.Int64 // microphone frames not sent while muted
	onRing   atomic.Pointer[func(timers.Entry)]

	mu         sync.Mutex
	st         persisted
	warnings   []string
	micWarning string // the warning of a mute after a bad state file, until the owner unmutes
	ringing    []timers.Entry
	ringStop   chan struct{} // closed to stop the ringing goroutine
	ringRenew  chan struct{} // gives the ringing its full time again
	ringDone   chan struct{} // closed when the ringing goroutine has returned
	notices    []string
	recent     []Event

	mixerMu sync.Mutex // serialises hardware updates, in order
}

// persisted is the state file.
type persisted struct {
	Version      int  `json:"version"`
	Volume       int  `json:"volume"`
	SpeakerMuted bool `json:"speaker_muted"`
	MicMuted     bool `json:"microphone_muted"`
}

// Bounds.
const (
	maxNotices = 16
	maxRecent  = 10
)

// New returns a device with its saved state. A state file that cannot be
// read is set aside and named in Warnings; the device then starts from
// the defaults, but with the microphone muted (saved, so that a restart
// keeps it) until the owner turns it on.
func New(o Options) (*Device, error) {
	if o.Volume <= 0 {
		o.Volume = 70
	}
	o.Volume = min(o.Volume, 100)
	if o.Range <= 0 {
		o.Range = DefaultRange
	}
	if o.Rate <= 0 {
		o.Rate = audio.WireRate
	}
	if o.Frame <= 0 {
		o.Frame = 60 * time.Millisecond
	}
	if o.RingFloor <= 0 {
		o.RingFloor = 60
	}
	if o.RingTimeout <= 0 {
		o.RingTimeout = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Standalone {
		o.StateDir, o.Mixer = "", nil
	}
	d := &Device{o: o, log: o.Log.With("component", "device"), start: o.Now()}
	d.st = persisted{Version: 1, Volume: o.Volume}
	switch {
	case o.Standalone:
	case o.StateDir == "":
		d.warnings = append(d.warnings, "no state folder (plugins.state_dir): volume, mute and timers are forgotten when the daemon stops")
	default:
		// MicMuted is a pointer here: every version writes it, so a document
		// without it (null, a later version's) cannot be trusted with the mute.
		var st struct {
			persisted
			MicMuted *bool `json:"microphone_muted"`
		}
		found, err := statefile.Read(d.statePath(), &st)
		switch {
		case err != nil:
			// The privacy mute fails closed: the file may have said muted.
			d.muteFailsClosed(fmt.Sprintf("device state: %v; starting from the defaults", err))
			var ce *statefile.CorruptError
			if errors.As(err, &ce) && ce.SetAside != "" {
				d.saveLocked() // the file was moved away: a restart must find the mute
			}
		case !found:
			// A file set aside whose muted successor could not be saved.
			if aside := setAside(d.statePath()); aside != "" {
				d.muteFailsClosed(fmt.Sprintf("device state: no %s, but %s was set aside; starting from the defaults", d.statePath(), aside))
			}
		case st.MicMuted == nil:
			d.muteFailsClosed(fmt.Sprintf("device state: %s does not say whether the microphone is muted; starting from the defaults", d.statePath()))
		case st.Volume < 0 || st.Volume > 100:
			d.warn(fmt.Sprintf("device state: %s has volume %d, outside 0–100; using %d", d.statePath(), st.Volume, o.Volume))
			d.st.SpeakerMuted, d.st.MicMuted = st.SpeakerMuted, *st.MicMuted
		default:
			d.st = st.persisted
			d.st.Version, d.st.MicMuted = 1, *st.MicMuted
		}
	}
	d.micMuted.Store(d.st.MicMuted)
	path := ""
	if o.StateDir != "" {
		path = filepath.Join(o.StateDir, "timers.json")
	}
	sched, err := timers.New(timers.Options{Path: path, Location: o.Location, Grace: o.Grace, Max: o.MaxTimers,
		Now: o.Now, Log: d.log, Fire: d.fired})
	if err != nil {
		d.warn(fmt.Sprintf("timers: %v; starting with none", err))
	}
	d.sched = sched
	d.chime = Chime(o.Rate)
	d.mu.Lock()
	level := d.applyLocked()
	d.mu.Unlock()
	d.setMixer(level)
	return d, nil
}

// setAside names a file that statefile set aside for path, or "".
func setAside(path string) string {
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range slices.Backward(entries) {
		if strings.HasPrefix(e.Name(), filepath.Base(path)+".corrupt-") {
			return filepath.Join(filepath.Dir(path), e.Name())
		}
	}
	return ""
}

// muteFailsClosed starts the microphone muted because the state file could
// not say whether it was (why), with a warning naming the way back.
func (d *Device) muteFailsClosed(why string) {
	d.st.MicMuted = true
	d.micWarning = why + ", with the microphone muted, since it may have been: " +
		"check the microphone is meant to be on, then turn it on with `agenthost mic on`"
	d.warn(d.micWarning)
}

func (d *Device) warn(msg string) {
	d.log.Warn(msg)
	d.warnings = append(d.warnings, msg)
}

func (d *Device) statePath() string { return filepath.Join(d.o.StateDir, "state.json") }

// Warnings are the problems found at start (a state file set aside).
func (d *Device) Warnings() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.warnings...)
}

// saveLocked writes the state file; d.mu held. A failure is logged and
// returned (the change holds until the daemon stops).
func (d *Device) saveLocked() error {
	if d.o.StateDir == "" {
		return nil
	}
	if err := statefile.Write(d.statePath(), d.st); err != nil {
		d.log.Warn("the device state could not be saved; it will be forgotten at a restart", "err", err)
		return err
	}
	return nil
}

// Name implements part.Part.
func (d *Device) Name() string { return "device" }

// Run runs the timers until ctx ends; then any ringing stops.
func (d *Device) Run(ctx context.Context, ready func()) error {
	ready()
	d.sched.Run(ctx)
	d.StopRinging("the daemon, which stops")
	if d.o.Mixer != nil {
		d.o.Mixer.Close()
	}
	return nil
}

// effectiveLocked is the volume the speaker plays at now: at least the
// ring floor, and unmuted, while a timer rings. d.mu held.
func (d *Device) effectiveLocked() (level int, muted bool) {
	level, muted = d.st.Volume, d.st.SpeakerMuted
	if len(d.ringing) > 0 {
		level, muted = max(level, d.o.RingFloor), false
	}
	return level, muted
}

// applyLocked sets the gain stage's target (or Levels) from the state and
// returns the level a hardware mixer must be set to (-1: none). d.mu held.
func (d *Device) applyLocked() int {
	level, muted := d.effectiveLocked()
	g := Curve(level, d.o.Range)
	if d.o.Mixer != nil {
		g = 1
	}
	if muted {
		g = 0
	}
	if d.o.Levels != nil {
		d.o.Levels(d.levelsLocked(level))
		g = 1
	}
	d.gain.Store(math.Float64bits(g))
	if d.o.Mixer == nil {
		return -1
	}
	return level
}

// levelsLocked are the gains of the ring and of the other sounds when the
// output mixer applies the volume (Options.Levels), the hardware control
// (if any) being at level: the ring at least at the floor and unmuted, the
// rest at the owner's volume, silent when muted. d.mu held.
func (d *Device) levelsLocked(level int) (ring, others float64) {
	ring = Curve(max(d.st.Volume, d.o.RingFloor), d.o.Range)
	if !d.st.SpeakerMuted {
		others = Curve(d.st.Volume, d.o.Range)
	}
	if d.o.Mixer != nil { // the control is at level already
		hw := Curve(level, d.o.Range)
		ring = 1
		if hw > 0 {
			others /= hw
		} else {
			others = 0
		}
	}
	return ring, min(others, 1)
}

// setMixer sets the hardware control, outside d.mu.
func (d *Device) setMixer(level int) {
	if level < 0 || d.o.Mixer == nil {
		return
	}
	d.mixerMu.Lock()
	defer d.mixerMu.Unlock()
	if err := d.o.Mixer.SetVolume(level); err != nil {
		d.log.Warn("the volume could not be set on the mixer", "mixer", d.o.Mixer.String(), "err", err)
	}
}

// Levels are the gains Options.Levels was last told (the ring's, the
// other sounds').
func (d *Device) Levels() (ring, others float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	level, _ := d.effectiveLocked()
	return d.levelsLocked(level)
}

// Gain is the gain stage's target now.
func (d *Device) Gain() float64 { return math.Float64frombits(d.gain.Load()) }

// Sink puts the volume stage in front of sink (the speaker). Put the echo
// canceller's tap (capture.TapSink) below it, next to the device: the
// reference must be what is played after the gain.
func (d *Device) Sink(sink audio.Sink) audio.Sink {
	return d.SinkFormat(sink, audio.Format{Rate: d.o.Rate, Channels: 1})
}

// SinkFormat is Sink for a speaker that takes frames of f (a stereo one at
// 48 kHz): a change of volume ramps over a frame of audio (Options.Frame)
// at f's rate, every channel of a sample frame at one gain.
func (d *Device) SinkFormat(sink audio.Sink, f audio.Format) audio.Sink {
	return newGainSink(sink, d.Gain, int(d.o.Frame.Seconds()*float64(f.Rate)), f.Channels)
}

// Volume returns the volume (0–100) and whether the speaker is muted.
func (d *Device) Volume() (level int, muted bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Volume, d.st.SpeakerMuted
}

// SetVolume sets the volume to level, or changes it by step when relative;
// the result is held within 0–100. Setting a volume unmutes the speaker.
func (d *Device) SetVolume(level int, relative bool) (int, error) {
	d.mu.Lock()
	if relative {
		level += d.st.Volume
	}
	d.st.Volume = max(0, min(100, level))
	d.st.SpeakerMuted = false
	hw := d.applyLocked()
	err := d.saveLocked()
	v := d.st.Volume
	d.mu.Unlock()
	d.setMixer(hw)
	d.log.Info("volume set", "volume", v)
	return v, saveErr(err)
}

// MuteSpeaker mutes or unmutes the speaker (a ringing timer is heard all
// the same).
func (d *Device) MuteSpeaker(muted bool) error {
	d.mu.Lock()
	changed := d.st.SpeakerMuted != muted
	d.st.SpeakerMuted = muted
	hw := d.applyLocked()
	err := d.saveLocked()
	d.mu.Unlock()
	d.setMixer(hw)
	if changed {
		d.log.Info("speaker "+onOff(!muted), "muted", muted)
		d.hook("mute", map[string]string{"DEVICE": "speaker", "MUTED": fmt.Sprint(muted)})
	}
	return saveErr(err)
}

// ErrOwnerOnly refuses to turn the microphone on for a caller that is not
// the device's owner. Its text is for the model to relay.
var ErrOwnerOnly = errors.New("the microphone was turned off for privacy and only the speaker's owner can turn it back on " +
	"(with the speaker's button, or `agenthost mic on` on the speaker); I cannot do it. Ask the user to turn it on themselves")

// MicMuted reports whether the microphone is muted: while it is, no
// microphone audio may leave the host.
func (d *Device) MicMuted() bool { return d.micMuted.Load() }

// SetMicMuted mutes or unmutes the microphone for caller. Anyone may mute
// it; only the owner may unmute it (ErrOwnerOnly). Unmuting one that is on
// changes nothing, and is no refusal.
func (d *Device) SetMicMuted(caller services.Caller, muted bool) error {
	if !muted && !caller.Owner() && !d.MicMuted() {
		return nil
	}
	if !muted && !caller.Owner() {
		d.log.Info("refused to turn the microphone on: only the owner may", "caller", caller.String())
		return ErrOwnerOnly
	}
	d.mu.Lock()
	changed := d.st.MicMuted != muted
	d.st.MicMuted = muted
	d.micMuted.Store(muted)
	if !muted && d.micWarning != "" {
		d.warnings = slices.DeleteFunc(d.warnings, func(w string) bool { return w == d.micWarning })
		d.micWarning = ""
	}
	err := d.saveLocked()
	d.mu.Unlock()
	if changed {
		d.log.Info("microphone "+onOff(!muted), "muted", muted, "by", caller.String())
		d.hook("mute", map[string]string{"DEVICE": "microphone", "MUTED": fmt.Sprint(muted), "BY": caller.String()})
	}
	return saveErr(err)
}

// Withheld counts a microphone frame that was not sent because the
// microphone is muted (the conversation calls it, and the link when it
// drops a frame at the write: host.New).
func (d *Device) Withheld() { d.withheld.Add(1) }

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// ErrNotSaved is wrapped by the error of a change that was made but could
// not be saved: it holds until the daemon stops.
var ErrNotSaved = errors.New("it could not be saved and will be forgotten if the speaker restarts")

// saveErr turns a failed save into what a caller is told.
func saveErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("done, but %w (%v)", ErrNotSaved, err)
}

func (d *Device) hook(event string, fields map[string]string) {
	if d.o.Hook != nil {
		d.o.Hook(event, fields)
	}
}
