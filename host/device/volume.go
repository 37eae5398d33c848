package device

import (
	"math"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// DefaultRange is the span of the volume curve: volume 1 is this many dB
// below volume 100.
const DefaultRange = 50.0

// Curve is the gain (amplitude, 0 to 1) of volume level (0–100): linear in
// decibels, rangeDB from level 1 to level 100, so each step sounds the same
// size to the ear; 0 is silence.
func Curve(level int, rangeDB float64) float64 {
	if level <= 0 {
		return 0
	}
	level = min(level, 100)
	return math.Pow(10, -rangeDB*float64(100-level)/99/20)
}

// gainSink is the volume stage of the playback path: it scales every
// sample by the device's gain, moving to a new gain over one ramp (a frame)
// so that a change never clicks; the channels of a frame (a stereo
// speaker's) share one gain, so they keep their balance. It sits between
// the output mixer and the speaker, above the echo canceller's tap
// (capture.TapSink), which must see what the speaker really plays.
type gainSink struct {
	inner audio.Sink
	gain  func() float64
	ramp  int // frames a change takes
	ch    int // samples a frame

	mu  sync.Mutex
	cur float64 // the gain the last sample had
	buf []int16
}

// newGainSink returns sink, which takes frames of ch samples, behind a
// gain stage; ramp is the length of a change, in frames.
func newGainSink(sink audio.Sink, gain func() float64, ramp, ch int) *gainSink {
	return &gainSink{inner: sink, gain: gain, ramp: max(ramp, 1), ch: max(ch, 1), cur: gain()}
}

func (s *gainSink) Write(p []int16) (int, error) {
	s.mu.Lock()
	target := s.gain()
	if cap(s.buf) < len(p) {
		s.buf = make([]int16, len(p))
	}
	out := s.buf[:len(p)]
	from := s.cur
	for i, v := range p {
		g := target
		if f := i / s.ch; f < s.ramp && from != target {
			g = from + (target-from)*float64(f+1)/float64(s.ramp)
		}
		out[i] = scale(v, g)
	}
	if n := len(p) / s.ch; n >= s.ramp || from == target {
		s.cur = target
	} else {
		s.cur = from + (target-from)*float64(n)/float64(s.ramp)
	}
	s.mu.Unlock()
	return s.inner.Write(out)
}

func scale(v int16, g float64) int16 {
	if g == 1 {
		return v
	}
	x := math.Round(float64(v) * g)
	return int16(max(min(x, math.MaxInt16), math.MinInt16))
}

func (s *gainSink) Close() error { return s.inner.Close() }

// Latency passes on the device's latency (capture.Latencer).
func (s *gainSink) Latency() time.Duration {
	if l, ok := s.inner.(interface{ Latency() time.Duration }); ok {
		return l.Latency()
	}
	return 0
}
