// Package audiorec is a test double of the host's output mixer for the
// tests of sound from plugins (audio/mixer is the real one): a
// pluginmgr.AudioOut that records what each stream is given, up to a bound.
package audiorec

import (
	"errors"
	"sync"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/host/pluginmgr"
)

// MaxSamples bounds what one stream records; more is counted, not kept.
const MaxSamples = 1 << 21

// Out is a recording pluginmgr.AudioOut.
type Out struct {
	mu      sync.Mutex
	streams []*Stream
}

// Stream is one stream opened on an Out.
type Stream struct {
	Source, Class string
	Format        audio.Format

	mu      sync.Mutex
	samples []int16
	total   int
	closed  bool
	pauses  []bool
	stopped chan struct{}
	ended   chan struct{}
	stop    sync.Once
	end     sync.Once
}

var (
	_ pluginmgr.AudioOut    = (*Out)(nil)
	_ pluginmgr.AudioStream = (*Stream)(nil)
)

// Open implements pluginmgr.AudioOut.
func (o *Out) Open(source, class string, f audio.Format) (pluginmgr.AudioStream, error) {
	s := &Stream{Source: source, Class: class, Format: f, stopped: make(chan struct{}), ended: make(chan struct{})}
	o.mu.Lock()
	o.streams = append(o.streams, s)
	o.mu.Unlock()
	return s, nil
}

// Streams returns the streams opened so far, oldest first.
func (o *Out) Streams() []*Stream {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*Stream(nil), o.streams...)
}

// Write implements pluginmgr.AudioStream; it fails once the stream was stopped.
func (s *Stream) Write(p []int16) (int, error) {
	select {
	case <-s.stopped:
		return 0, errors.New("stream stopped")
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += len(p)
	if room := MaxSamples - len(s.samples); room > 0 {
		s.samples = append(s.samples, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Close implements pluginmgr.AudioStream: what was written counts as played.
func (s *Stream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.end.Do(func() { close(s.ended) })
	return nil
}

// Stop implements pluginmgr.AudioStream.
func (s *Stream) Stop() {
	s.stop.Do(func() { close(s.stopped) })
	s.end.Do(func() { close(s.ended) })
}

// Pause implements pluginmgr.AudioStream.
func (s *Stream) Pause(p bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses = append(s.pauses, p)
}

// Samples returns the samples recorded (at most MaxSamples), the number
// written in all, and whether the stream was played out (Close).
func (s *Stream) Samples() (samples []int16, total int, playedOut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int16(nil), s.samples...), s.total, s.closed
}

// Written is the number of samples written so far.
func (s *Stream) Written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Pauses returns the Pause calls' arguments in order.
func (s *Stream) Pauses() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.pauses...)
}

// Stopped is closed when the stream was stopped.
func (s *Stream) Stopped() <-chan struct{} { return s.stopped }

// Ended is closed when the stream was played out or stopped.
func (s *Stream) Ended() <-chan struct{} { return s.ended }
