// Package mixer is the speaker's software output mixer: the one writer to
// the loudspeaker. Streams of any rate and channel count are opened on it
// (converted to the output's rate by libsoxr, their channels mapped to the
// output's: a mono stream is centred, on every channel at one level) and
// summed, each with a class that sets how it yields to the others.
//
// The policy:
//   - Ring (a timer, an alarm) is above everything: while a ring stream
//     sounds, every other stream is ducked by DuckDB. A ring or an
//     announcement sounds while it is not paused and has had sound within
//     the last two frames (or the ramp, if longer): one that holds none (a
//     writer that sent nothing, or stalled) ducks nothing.
//   - While the assistant is active (SetActive: it listens or speaks), or
//     an announcement or a ring plays, media is ducked by DuckDB, or paused
//     when MediaWhileActive is "pause".
//   - While the assistant is active, an announcement is ducked (or paused)
//     as media is: the owner's turn and the reply are heard over it.
//   - Voice replies and earcons are not ducked by announcements, nor by the
//     assistant's activity.
//   - The speaker's volume may be the mixer's (SetLevels): ring streams at
//     one level, the rest at another, so that a ring sounds alone on a
//     muted speaker.
//   - Every change of a stream's gain (ducking, pausing, resuming) moves
//     over the ramp, linearly, so that it never clicks.
//   - The sum saturates at the 16-bit limits instead of wrapping.
//   - Media and announcements (the plugins' sound) never take the last
//     Reserved streams: a reply, an earcon and a ring always open.
//
// The output is interleaved frames of Options.Channels at Options.Rate, the
// speaker's format (48 kHz stereo for a sound card; see config's
// audio.output_rate). A gain, ducking's ramp included, applies to a whole
// frame, so channels keep their balance. The mixer
// writes frame by frame as fast as the output takes them, so a device that
// blocks (PortAudio, a paced file) sets the pace; a stream's Write blocks
// while its small buffer is full, which paces its writer to the speaker.
// A writer that stalls leaves its stream empty: the rest plays on.
package mixer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// Class is what a stream is, which decides how it yields to the others.
type Class int

// The classes, from the one above all to the one that yields most.
const (
	Ring Class = iota
	Voice
	Earcon
	Announcement
	Media
)

var classNames = [...]string{"ring", "voice", "earcon", "announcement", "media"}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return fmt.Sprintf("class(%d)", int(c))
	}
	return classNames[c]
}

// ParseClass reads a class by its name (ring, voice, earcon, announcement,
// media).
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("mixer: no class %q; use one of %s", s, strings.Join(classNames[:], ", "))
}

// Options configure a Mixer.
type Options struct {
	// Rate is the output's rate (default audio.WireRate).
	Rate int
	// Channels is the output's channel count, 1–8 (default 1: mono).
	Channels int
	// Frame is how much is mixed and written at a time (default 20 ms).
	Frame time.Duration
	// DuckDB is how far a ducked stream is turned down (default -20 dB).
	DuckDB float64
	// Ramp is how long a change of gain from 0 to 1 takes (default 20 ms).
	Ramp time.Duration
	// MediaWhileActive is "duck" (default) or "pause".
	MediaWhileActive string
	// MaxStreams bounds the streams open at once (default 16). Media and
	// announcements (the plugins' sound) may take all but Reserved of them.
	MaxStreams int
	// Buffer is what a stream holds ahead of the mix (default 4 frames).
	Buffer time.Duration
	// KeepFed, when set, is the silence written at a time while nothing
	// plays, so that the device never runs dry (the echo canceller needs its
	// reference to go on); 0 writes nothing while idle.
	KeepFed time.Duration
	Logger  *slog.Logger
}

// Reserved is how many of MaxStreams (at most half) are kept for the
// speaker's own classes: a reply and the one playing out, an earcon and a
// ring.
const Reserved = 4

// Modes of MediaWhileActive.
const (
	Duck  = "duck"
	Pause = "pause"
)

// withDefaults fills in the defaults; a setting out of range gets its
// default too, and is named in the error.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.Rate <= 0 {
		o.Rate = audio.WireRate
	}
	if o.Channels > 8 {
		errs = append(errs, fmt.Errorf("mixer: %d output channels; at most 8", o.Channels))
		o.Channels = 0
	}
	if o.Channels <= 0 {
		o.Channels = 1
	}
	if o.Frame <= 0 {
		o.Frame = 20 * time.Millisecond
	}
	if o.DuckDB > 0 {
		errs = append(errs, fmt.Errorf("mixer: duck_db %g must be below 0", o.DuckDB))
		o.DuckDB = 0
	}
	if o.DuckDB == 0 {
		o.DuckDB = -20
	}
	if o.Ramp <= 0 {
		o.Ramp = 20 * time.Millisecond
	}
	switch o.MediaWhileActive {
	case "":
		o.MediaWhileActive = Duck
	case Duck, Pause:
	default:
		errs = append(errs, fmt.Errorf("mixer: media_while_active %q: use duck or pause", o.MediaWhileActive))
		o.MediaWhileActive = Duck
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 16
	}
	if o.Buffer <= 0 {
		o.Buffer = 4 * o.Frame
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, errors.Join(errs...)
}

// ErrClosed is returned by a stream's Write after Stop, Close or the end of
// the mixer, and by Open once the mixer has ended.
var ErrClosed = errors.New("mixer: stream closed")

// Mixer mixes the streams opened on it into one output.
type Mixer struct {
	out   audio.Sink
	o     Options
	log   *slog.Logger
	ch    int     // output channels
	frame int     // frames per write
	step  float64 // gain change per frame (the ramp)
	hold  int64   // frames after its last that a stream still sounds
	duck  float64 // a ducked stream's gain

	mu      sync.Mutex
	wake    chan struct{} // a stream has data, or the policy changed
	streams []*Stream
	active  bool
	ended   bool
	ducked  bool // media was ducked at the last mix (for Stats)
	ducks   int64
	opened  int64
	played  [Media + 1]int64 // frames mixed, by class
	clock   int64            // frames mixed out in all
	acc     []int32
	mixed   []int16
	keepFed time.Duration
	startAt [Media + 1]time.Time // StartAt's instant, by class
	sounded time.Time            // when a stream last gave frames to the mix
	// The speaker's volume when the mixer carries it (SetLevels): the gain
	// of ring streams, and of every other one.
	ringLevel, otherLevel float64
}

// New returns a mixer that writes to out once Run runs. Options out of
// range fall back to their defaults (and are logged).
func New(out audio.Sink, o Options) *Mixer {
	o, err := o.withDefaults()
	if err != nil {
		o.Logger.Warn("mixer settings out of range; using the defaults", "err", err)
	}
	m := &Mixer{out: out, o: o, log: o.Logger.With("component", "mixer"), ch: o.Channels,
		frame: max(1, int(o.Frame.Seconds()*float64(o.Rate))),
		step:  1 / max(1, o.Ramp.Seconds()*float64(o.Rate)),
		duck:  math.Pow(10, o.DuckDB/20),
		hold:  int64(max(2*o.Frame, o.Ramp).Seconds() * float64(o.Rate)),
		wake:  make(chan struct{}, 1), ringLevel: 1, otherLevel: 1}
	m.acc = make([]int32, m.frame*m.ch)
	m.mixed = make([]int16, m.frame*m.ch)
	m.keepFed = max(0, o.KeepFed)
	return m
}

// SetKeepFed changes Options.KeepFed (0: nothing is written while idle).
func (m *Mixer) SetKeepFed(d time.Duration) {
	m.mu.Lock()
	m.keepFed = max(0, d)
	m.mu.Unlock()
	m.signal()
}

// Options are the settings in use, defaults filled in.
func (m *Mixer) Options() Options {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.o
}

// Format is the output's: what is written to the speaker.
func (m *Mixer) Format() audio.Format { return audio.Format{Rate: m.o.Rate, Channels: m.ch} }

func (m *Mixer) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// SetActive says whether the assistant listens or speaks: media is ducked
// (or paused) while it does.
func (m *Mixer) SetActive(on bool) {
	m.mu.Lock()
	changed := m.active != on
	m.active = on
	m.mu.Unlock()
	if changed {
		m.log.Debug("assistant activity", "active", on)
		m.signal()
	}
}

// SetLevels sets the speaker's volume in the mix: ring streams play at
// gain ring, every other stream at others (0: a muted speaker, on which a
// ring sounds alone), on top of how they yield to each other. A change
// moves over the ramp.
func (m *Mixer) SetLevels(ring, others float64) {
	clamp := func(g float64) float64 { return max(0, min(1, g)) }
	m.mu.Lock()
	m.ringLevel, m.otherLevel = clamp(ring), clamp(others)
	m.mu.Unlock()
	m.signal()
}

// levelLocked is the volume s plays at (SetLevels); m.mu held.
func (m *Mixer) levelLocked(s *Stream) float64 {
	if s.class == Ring {
		return m.ringLevel
	}
	return m.otherLevel
}

// Active reports what SetActive said last.
func (m *Mixer) Active() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active
}

// StreamStatus is what a stream is and where it is.
type StreamStatus struct {
	Name     string        `json:"name"`
	Class    string        `json:"class"`
	Format   string        `json:"format"`
	Position time.Duration `json:"-"`
	Seconds  float64       `json:"position_s"` // Position in seconds
	Ducked   bool          `json:"ducked,omitempty"`
	Paused   bool          `json:"paused,omitempty"`
}

// Status lists the streams open, in the order they were opened.
func (m *Mixer) Status() []StreamStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	ringing, announcing := m.conditionsLocked()
	out := make([]StreamStatus, 0, len(m.streams))
	for _, s := range m.streams {
		target, paused := m.targetLocked(s, ringing, announcing)
		pos := m.duration(s.pos)
		out = append(out, StreamStatus{Name: s.name, Class: s.class.String(), Format: s.f.String(),
			Position: pos, Seconds: pos.Round(10 * time.Millisecond).Seconds(),
			Ducked: target < 1 && !paused, Paused: paused})
	}
	return out
}

// Stats are the mixer's counters.
type Stats struct {
	Streams int   // open now
	Opened  int64 // since start
	Ducks   int64 // times media was turned down (ducked or paused)
	Active  bool
	// Played is how long streams of each class have played since start.
	Played map[string]time.Duration
}

// Stats reports the counters.
func (m *Mixer) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Stats{Streams: len(m.streams), Opened: m.opened, Ducks: m.ducks, Active: m.active, Played: map[string]time.Duration{}}
	for c, n := range m.played {
		st.Played[Class(c).String()] = m.duration(n)
	}
	return st
}

// duration is how long n frames at the output's rate play: whole seconds
// first, so that a week of samples does not overflow.
func (m *Mixer) duration(n int64) time.Duration {
	r := int64(m.o.Rate)
	return time.Duration(n/r)*time.Second + time.Duration(n%r)*time.Second/time.Duration(r)
}

// conditionsLocked: whether a ring or an announcement sounds; m.mu held.
func (m *Mixer) conditionsLocked() (ringing, announcing bool) {
	for _, s := range m.streams {
		switch {
		case s.class == Ring && m.soundsLocked(s):
			ringing = true
		case s.class == Announcement && m.soundsLocked(s):
			announcing = true
		}
	}
	return
}

// soundsLocked: s is not paused or held and has sound, or had some within
// m.hold; m.mu held.
func (m *Mixer) soundsLocked(s *Stream) bool {
	return !s.paused && s.until.IsZero() && (s.n > 0 || s.sounded && m.clock-s.heard <= m.hold)
}

// targetLocked is the gain s moves to, and whether it is held (paused);
// m.mu held.
func (m *Mixer) targetLocked(s *Stream, ringing, announcing bool) (gain float64, paused bool) {
	if s.paused {
		return 0, true
	}
	switch s.class {
	case Ring:
		return 1, false
	case Media, Announcement:
		if m.active || s.class == Media && (ringing || announcing) {
			if m.o.MediaWhileActive == Pause {
				return 0, true
			}
			return m.duck, false
		}
	}
	if ringing {
		return m.duck, false
	}
	return 1, false
}

// SoundedWithin reports whether any stream gave the speaker sound within
// the last d: what the microphone hears now may hold the speaker's own
// sound (its echo's tail, the output's latency).
func (m *Mixer) SoundedWithin(d time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.sounded.IsZero() && time.Since(m.sounded) <= d
}

// StartAt holds every stream of class c opened from now until at: each
// sounds from at, not before, its writer filling its buffer meanwhile. So
// several speakers start one sound together, each having had the time to
// decode ahead. A stream opened after at sounds at once.
func (m *Mixer) StartAt(c Class, at time.Time) {
	if c < Ring || c > Media {
		return
	}
	m.mu.Lock()
	m.startAt[c] = at
	m.mu.Unlock()
}

// Run mixes and writes to the output until ctx ends; it is the output's
// only writer. Streams still open then are ended (their Write fails, their
// Close returns).
func (m *Mixer) Run(ctx context.Context) error {
	defer m.end()
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	var silence []int16
	var until time.Time // when what was written last has played, as far as is known
	write := func(p []int16) {
		start := time.Now()
		m.write(p)
		if until.Before(start) {
			until = start
		}
		until = until.Add(time.Duration(len(p)/m.ch) * time.Second / time.Duration(m.o.Rate))
	}
	for ctx.Err() == nil {
		n, left := m.mix()
		if n > 0 {
			write(m.mixed[:n*m.ch])
		}
		for _, s := range left { // played out: their Close returns
			s.gone()
		}
		if n == 0 {
			m.mu.Lock()
			keep := m.keepFed
			m.mu.Unlock()
			if keep == 0 {
				select {
				case <-m.wake:
				case <-ctx.Done():
				}
				continue
			}
			// The next silence goes out when what is queued has a little
			// left (half a block, at most 10 ms), whether the device took the
			// last write at once (a buffer) or only as it played (a clock).
			if wait := time.Until(until) - min(keep/2, 10*time.Millisecond); wait > 0 {
				idle.Reset(wait)
				select {
				case <-m.wake:
					idle.Stop()
					continue
				case <-idle.C:
				case <-ctx.Done():
					continue
				}
			}
			if k := max(1, int(keep.Seconds()*float64(m.o.Rate))) * m.ch; len(silence) != k {
				silence = make([]int16, k)
			}
			write(silence)
		}
	}
	return nil
}

func (m *Mixer) write(p []int16) {
	if _, err := m.out.Write(p); err != nil {
		m.log.Warn("the speaker failed", "err", err)
		time.Sleep(100 * time.Millisecond) // not a busy loop on a failing device
	}
}

// end ends every stream: the mixer is done.
func (m *Mixer) end() {
	m.mu.Lock()
	m.ended = true
	ss := m.streams
	m.streams = nil
	m.mu.Unlock()
	for _, s := range ss {
		s.gone()
	}
}

// mix sums the next block into m.mixed and returns its length in frames (0
// when no stream has anything to play) and the streams that have played
// out.
func (m *Mixer) mix() (int, []*Stream) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ringing, announcing := m.conditionsLocked()
	var n int
	clear(m.acc)
	ducked := false
	keep := m.streams[:0]
	var left []*Stream
	for _, s := range m.streams {
		if !s.until.IsZero() {
			if time.Now().Before(s.until) {
				keep = append(keep, s) // held: StartAt
				continue
			}
			s.until = time.Time{}
		}
		target, paused := m.targetLocked(s, ringing, announcing)
		if s.class == Media && target < 1 && !s.paused {
			ducked = true
		}
		k := s.mixInto(m.acc, m.ch, target*m.levelLocked(s), m.step, paused)
		m.played[s.class] += int64(k)
		if k > 0 {
			s.sounded, s.heard = true, m.clock+int64(k)
		}
		n = max(n, k)
		if s.closing && s.n == 0 {
			left = append(left, s)
			continue
		}
		keep = append(keep, s)
	}
	clear(m.streams[len(keep):])
	m.streams = keep
	m.clock += int64(n)
	if n > 0 {
		m.sounded = time.Now()
	}
	if ducked && !m.ducked {
		m.ducks++
	}
	m.ducked = ducked
	for i, v := range m.acc[:n*m.ch] {
		m.mixed[i] = int16(max(min(v, math.MaxInt16), math.MinInt16))
	}
	return n, left
}
