package mixer

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/resample"
)

// Stream is one sound on the mixer. Write, Close and Stop may be called
// from any goroutine, but Write from one at a time.
type Stream struct {
	m     *Mixer
	name  string
	class Class
	f     audio.Format

	// The writer's side (one writer at a time).
	wmu   sync.Mutex
	rs    *resample.Resampler // nil when f.Rate is the output's
	remix []int16
	conv  []int16

	// Guarded by m.mu.
	buf     []int16 // a ring of len(buf)/m.ch frames at the output's format
	r, n    int     // read position and frames held
	gain    float64 // the gain of the last frame mixed
	pos     int64   // frames mixed
	heard   int64   // m.clock after the last frame mixed
	sounded bool    // some frame was mixed
	paused  bool
	until   time.Time // held until then (StartAt)
	closing bool      // Close: leave once empty
	stopped bool
	why     string // StopClass's reason, which Write returns

	space chan struct{} // the mixer took samples
	done  chan struct{} // closed when the stream has left the mixer
	once  sync.Once
}

// Open adds a stream of format f (interleaved, any rate and channel count)
// to the mix: it is resampled to the output's rate and its channels mapped
// to the output's (audio.Remix: a mono stream on every channel at one level,
// stereo kept as it is on a stereo output, averaged on a mono one). It fails once MaxStreams are open (media and announcements:
// all but Reserved of them) or the mixer has ended.
func (m *Mixer) Open(name string, c Class, f audio.Format) (*Stream, error) {
	if c < Ring || c > Media {
		return nil, fmt.Errorf("mixer: stream %q: unknown class %d", name, int(c))
	}
	if f.Rate < 1000 || f.Rate > 384000 || f.Channels < 1 || f.Channels > 8 {
		return nil, fmt.Errorf("mixer: stream %q: format %s is not one the mixer takes (1–384 kHz, 1–8 channels)", name, f)
	}
	s := &Stream{m: m, name: name, class: c, f: f, gain: 1,
		buf:   make([]int16, max(m.frame, int(m.o.Buffer.Seconds()*float64(m.o.Rate)))*m.ch),
		space: make(chan struct{}, 1), done: make(chan struct{})}
	if f.Rate != m.o.Rate {
		rs, err := resample.New(f.Rate, m.o.Rate, min(f.Channels, m.ch), resample.High)
		if err != nil {
			return nil, fmt.Errorf("mixer: stream %q: %w", name, err)
		}
		s.rs = rs
	}
	m.mu.Lock()
	switch {
	case m.ended:
		m.mu.Unlock()
		s.free()
		return nil, fmt.Errorf("mixer: stream %q: %w (the speaker has stopped)", name, ErrClosed)
	case len(m.streams) >= m.o.MaxStreams:
		m.mu.Unlock()
		s.free()
		return nil, fmt.Errorf("mixer: stream %q refused: %d streams play already (the most)", name, len(m.streams))
	case c == Media || c == Announcement:
		most := m.o.MaxStreams - min(Reserved, m.o.MaxStreams/2)
		if n := m.countLocked(Media) + m.countLocked(Announcement); n >= most {
			m.mu.Unlock()
			s.free()
			return nil, fmt.Errorf("mixer: stream %q refused: %d media and announcement streams play already, the most (the other %d are kept for the speaker's replies, earcons and ring)",
				name, n, m.o.MaxStreams-most)
		}
	}
	ringing, announcing := m.conditionsLocked()
	target, _ := m.targetLocked(s, ringing, announcing)
	s.gain = target * m.levelLocked(s) // a stream starts at its level (ducked, the volume)
	m.streams = append(m.streams, s)
	m.opened++
	if wait := time.Until(m.startAt[c]); wait > 0 {
		s.until = m.startAt[c]
		time.AfterFunc(wait, m.signal) // a mixer with nothing else to play wakes for it
	}
	m.mu.Unlock()
	m.log.Debug("stream opened", "name", name, "class", c.String(), "format", f.String())
	m.signal()
	return s, nil
}

// countLocked is how many streams of class c are open; m.mu held.
func (m *Mixer) countLocked(c Class) int {
	n := 0
	for _, s := range m.streams {
		if s.class == c {
			n++
		}
	}
	return n
}

// Name is the stream's name.
func (s *Stream) Name() string { return s.name }

// Write queues p, interleaved samples at the stream's format. It blocks
// while the stream's buffer is full, and fails after Stop, Close or the
// mixer's end.
func (s *Stream) Write(p []int16) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(p)%s.f.Channels != 0 {
		return 0, fmt.Errorf("mixer: stream %q: %d samples are not whole frames of %d channels", s.name, len(p), s.f.Channels)
	}
	pcm, err := s.convert(p)
	if err != nil {
		return 0, err
	}
	if err := s.queue(pcm); err != nil {
		s.free() // the stream is over: let the converter go
		return 0, err
	}
	return len(p), nil
}

// convert turns p into frames of the output's format: the channels are
// mapped before the rate is converted when the output has fewer (fewer to
// resample), after it when it has more.
func (s *Stream) convert(p []int16) ([]int16, error) {
	in, out := s.f.Channels, s.m.ch
	if in > out {
		s.remix = audio.Remix(s.remix[:0], p, in, out)
		p, in = s.remix, out
	}
	if s.rs != nil {
		var err error
		if s.conv, err = s.rs.Append(s.conv[:0], p); err != nil {
			return nil, fmt.Errorf("mixer: stream %q: %w", s.name, err)
		}
		p = s.conv
	}
	if in < out {
		s.remix = audio.Remix(s.remix[:0], p, in, out)
		p = s.remix
	}
	return p, nil
}

// queue copies pcm (frames of the output's format) into the ring, waiting
// for room.
func (s *Stream) queue(pcm []int16) error {
	m := s.m
	ch := m.ch
	frames := len(s.buf) / ch
	for len(pcm) > 0 {
		m.mu.Lock()
		if s.stopped || s.closing || m.ended {
			why := s.why
			m.mu.Unlock()
			if why != "" {
				return stoppedError(why)
			}
			return fmt.Errorf("mixer: stream %q: %w", s.name, ErrClosed)
		}
		k := min(frames-s.n, len(pcm)/ch)
		at := (s.r + s.n) % frames
		first := min(k, frames-at) // up to the ring's end, then from its start
		copy(s.buf[at*ch:], pcm[:first*ch])
		copy(s.buf, pcm[first*ch:k*ch])
		s.n += k
		pcm = pcm[k*ch:]
		m.mu.Unlock()
		if k > 0 {
			m.signal()
		}
		if len(pcm) > 0 {
			select {
			case <-s.space:
			case <-s.done:
			}
		}
	}
	return nil
}

// Close plays out what is buffered, then takes the stream off the mixer;
// it returns once it has (or the mixer has ended). A paused stream plays
// out once it is resumed: Stop one that is not to be.
func (s *Stream) Close() error {
	s.wmu.Lock()
	var tail []int16
	if s.rs != nil {
		tail, _ = s.rs.Flush(s.conv[:0])
		if in := min(s.f.Channels, s.m.ch); in < s.m.ch {
			s.remix = audio.Remix(s.remix[:0], tail, in, s.m.ch)
			tail = s.remix
		}
	}
	s.queue(tail) // fails only when the stream is over anyway
	m := s.m
	m.mu.Lock()
	s.closing = true
	m.mu.Unlock()
	m.signal()
	<-s.done
	s.free()
	s.wmu.Unlock()
	return nil
}

// Stop takes the stream off the mixer at once, dropping what it holds.
func (s *Stream) Stop() { s.stop("") }

// stop is Stop; why, when set, is what its Write says from now on.
func (s *Stream) stop(why string) {
	m := s.m
	m.mu.Lock()
	if !s.stopped && why != "" {
		s.why = why
	}
	s.stopped = true
	for i, o := range m.streams {
		if o == s {
			m.streams = append(m.streams[:i], m.streams[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
	s.gone()
	m.signal()
	if s.wmu.TryLock() { // no Write under way: free the converter now
		s.free()
		s.wmu.Unlock()
	}
}

// Pause holds the stream where it is (after a ramp down), or lets it go on.
func (s *Stream) Pause(on bool) {
	s.m.mu.Lock()
	s.paused = on
	s.m.mu.Unlock()
	s.m.signal()
}

// gone marks the stream as off the mixer.
func (s *Stream) gone() { s.once.Do(func() { close(s.done) }) }

// free lets the converter go; the writer's lock held or no writer left.
func (s *Stream) free() {
	if s.rs != nil {
		s.rs.Close()
		s.rs = nil
	}
}

// mixInto adds up to len(acc)/ch frames of s to acc, moving its gain
// toward target by step a frame (every channel of a frame at one gain); a
// paused stream whose gain has reached 0 takes nothing. It returns the
// frames taken. m.mu held.
func (s *Stream) mixInto(acc []int32, ch int, target, step float64, paused bool) int {
	if paused && s.gain == 0 {
		return 0
	}
	frames := len(s.buf) / ch
	k := min(len(acc)/ch, s.n)
	g := s.gain
	at := s.r * ch
	for i := range k {
		switch {
		case g < target:
			g = min(target, g+step)
		case g > target:
			g = max(target, g-step)
		}
		if at == len(s.buf) {
			at = 0
		}
		if g == 1 {
			for c, v := range s.buf[at : at+ch] {
				acc[i*ch+c] += int32(v)
			}
		} else {
			for c, v := range s.buf[at : at+ch] {
				acc[i*ch+c] += int32(math.Round(float64(v) * g))
			}
		}
		at += ch
		if paused && g == 0 {
			k = i + 1
			break
		}
	}
	s.gain = g
	s.r = (s.r + k) % frames
	s.n -= k
	s.pos += int64(k)
	if k > 0 {
		select {
		case s.space <- struct{}{}:
		default:
		}
	}
	return k
}

// stoppedError is a Write's error after StopClass: its reason, and
// ErrClosed.
type stoppedError string

func (e stoppedError) Error() string        { return string(e) }
func (e stoppedError) Is(target error) bool { return target == ErrClosed }

// StopClass takes every stream of class c off the mixer at once (as Stop),
// and returns their names; their writers' next Write fails with why.
func (m *Mixer) StopClass(c Class, why string) []string {
	m.mu.Lock()
	var ss []*Stream
	for _, s := range m.streams {
		if s.class == c {
			ss = append(ss, s)
		}
	}
	m.mu.Unlock()
	names := make([]string, len(ss))
	for i, s := range ss {
		s.stop(why)
		names[i] = s.name
	}
	if len(ss) > 0 {
		m.log.Info("streams stopped", "class", c.String(), "streams", len(ss), "why", why)
	}
	return names
}
