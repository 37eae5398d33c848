package audio

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio/resample"
)

// toWire turns interleaved device frames into mono samples at the wire
// rate: channels are averaged first (so only one channel is resampled), then
// the rate is converted by libsoxr. At equal rates and one channel it copies,
// so the samples pass bit-exact.
type toWire struct {
	channels int
	rs       *resample.Resampler
	mono     []int16
}

func newToWire(dev Format, wireRate int, q resample.Quality) (*toWire, error) {
	c := &toWire{channels: dev.Channels}
	if dev.Rate != wireRate {
		rs, err := resample.New(dev.Rate, wireRate, 1, q)
		if err != nil {
			return nil, err
		}
		c.rs = rs
	}
	return c, nil
}

func (c *toWire) append(dst, frames []int16) ([]int16, error) {
	mono := frames
	if c.channels > 1 {
		c.mono = downmix(c.mono[:0], frames, c.channels)
		mono = c.mono
	}
	if c.rs == nil {
		return append(dst, mono...), nil
	}
	return c.rs.Append(dst, mono)
}

func (c *toWire) flush(dst []int16) ([]int16, error) {
	if c.rs == nil {
		return dst, nil
	}
	return c.rs.Flush(dst)
}

func (c *toWire) close() {
	if c.rs != nil {
		c.rs.Close()
	}
}

// fromWire turns the samples a sink takes (interleaved frames of format
// in) into device frames: channels are mapped first when the device has
// fewer (so fewer are resampled), the rate is converted by libsoxr, then
// channels are mapped when the device has more. At equal formats it copies.
type fromWire struct {
	in, dev int // channels
	rs      *resample.Resampler
	tmp     []int16
	tmp2    []int16
}

func newFromWire(dev Format, in Format, q resample.Quality) (*fromWire, error) {
	c := &fromWire{in: max(in.Channels, 1), dev: dev.Channels}
	if dev.Rate != in.Rate {
		rs, err := resample.New(in.Rate, dev.Rate, min(c.in, c.dev), q)
		if err != nil {
			return nil, err
		}
		c.rs = rs
	}
	return c, nil
}

func (c *fromWire) append(dst, frames []int16) ([]int16, error) {
	if c.in > c.dev {
		c.tmp2 = remix(c.tmp2[:0], frames, c.in, c.dev)
		frames = c.tmp2
	}
	if c.rs != nil {
		var err error
		if c.tmp, err = c.rs.Append(c.tmp[:0], frames); err != nil {
			return dst, err
		}
		frames = c.tmp
	}
	return remix(dst, frames, min(c.in, c.dev), c.dev), nil
}

func (c *fromWire) flush(dst []int16) ([]int16, error) {
	if c.rs == nil {
		return dst, nil
	}
	var err error
	if c.tmp, err = c.rs.Flush(c.tmp[:0]); err != nil {
		return dst, err
	}
	return remix(dst, c.tmp, min(c.in, c.dev), c.dev), nil
}

func (c *fromWire) close() {
	if c.rs != nil {
		c.rs.Close()
	}
}

// delay is how long the sound held in the converter plays (it is heard
// after what the device holds).
func (c *fromWire) delay() time.Duration {
	if c.rs == nil {
		return 0
	}
	return time.Duration(c.rs.Delay() * float64(time.Second) / float64(c.rs.OutRate()))
}

// Remix appends frames of from channels to dst as frames of to channels:
// equal counts copy; one channel goes to every channel at the same level
// (a mono sound centred); to one channel, the channels are averaged; 3–8
// channels to stereo, in the usual layouts (FL FR, then FC and LFE where
// they have them, then the surrounds in left-right pairs), average the
// left and the right channels on each side and the centre ones on both;
// other counts map channel i of the output to the average of the input
// channels i, i+to, … (more outputs than inputs: channel i takes input
// i mod from).
func Remix(dst, frames []int16, from, to int) []int16 { return remix(dst, frames, from, to) }

// stereoRoles are the 3–8 channel layouts for a stereo downmix: L, R, or
// C for both sides (WAVE_FORMAT_EXTENSIBLE's default masks).
var stereoRoles = [...]string{3: "LRC", 4: "LRLR", 5: "LRCLR", 6: "LRCCLR", 7: "LRCCCLR", 8: "LRCCLRLR"}

func remix(dst, frames []int16, from, to int) []int16 {
	switch {
	case from == to:
		return append(dst, frames...)
	case from == 1:
		return upmix(dst, frames, to)
	case to == 1:
		return downmix(dst, frames, from)
	case to == 2 && from < len(stereoRoles):
		roles := stereoRoles[from]
		nc := strings.Count(roles, "C")
		nl, nr := int32(strings.Count(roles, "L")+nc), int32(strings.Count(roles, "R")+nc)
		for i := 0; i+from <= len(frames); i += from {
			var l, r int32
			for j, v := range frames[i : i+from] {
				switch roles[j] {
				case 'L':
					l += int32(v)
				case 'R':
					r += int32(v)
				default:
					l += int32(v)
					r += int32(v)
				}
			}
			dst = append(dst, int16(l/nl), int16(r/nr))
		}
		return dst
	}
	for i := 0; i+from <= len(frames); i += from {
		f := frames[i : i+from]
		for c := range to {
			if to > from {
				dst = append(dst, f[c%from])
				continue
			}
			var sum, n int32
			for j := c; j < from; j += to {
				sum += int32(f[j])
				n++
			}
			dst = append(dst, int16(sum/n))
		}
	}
	return dst
}

// downmix appends the average of each frame's channels to dst.
func downmix(dst, frames []int16, channels int) []int16 {
	if channels == 2 {
		for i := 0; i+1 < len(frames); i += 2 {
			dst = append(dst, int16((int32(frames[i])+int32(frames[i+1]))>>1))
		}
		return dst
	}
	for i := 0; i+channels <= len(frames); i += channels {
		var sum int32
		for _, s := range frames[i : i+channels] {
			sum += int32(s)
		}
		dst = append(dst, int16(sum/int32(channels)))
	}
	return dst
}

// upmix appends each sample repeated channels times to dst.
func upmix(dst, mono []int16, channels int) []int16 {
	if channels == 1 {
		return append(dst, mono...)
	}
	for _, s := range mono {
		for range channels {
			dst = append(dst, s)
		}
	}
	return dst
}

// ConvertSink returns a sink that takes interleaved frames of format in and
// writes them to sink as frames of format out (channels mapped as Remix
// does, the rate converted by libsoxr). Close writes what the converter
// still holds and closes sink; Latency is sink's.
func ConvertSink(sink Sink, in, out Format) (Sink, error) {
	if in == out {
		return sink, nil
	}
	conv, err := newFromWire(out, in, resample.High)
	if err != nil {
		return nil, fmt.Errorf("audio: convert %v to %v: %w", in, out, err)
	}
	return &convertSink{sink: sink, conv: conv, ch: max(in.Channels, 1)}, nil
}

type convertSink struct {
	mu     sync.Mutex
	sink   Sink
	conv   *fromWire
	ch     int
	buf    []int16
	closed bool
	held   atomic.Int64 // the converter's delay after the last write
}

func (s *convertSink) Write(p []int16) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if len(p)%s.ch != 0 {
		return 0, fmt.Errorf("audio: %d samples are not whole frames of %d channels", len(p), s.ch)
	}
	var err error
	if s.buf, err = s.conv.append(s.buf[:0], p); err != nil {
		return 0, err
	}
	s.held.Store(int64(s.conv.delay()))
	if len(s.buf) > 0 {
		if _, err := s.sink.Write(s.buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (s *convertSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.buf, err = s.conv.flush(s.buf[:0]); err == nil && len(s.buf) > 0 {
		_, err = s.sink.Write(s.buf)
	}
	s.conv.close()
	return errors.Join(err, s.sink.Close())
}

// ConvertsRate reports whether the rate is converted: the end of what was
// written then waits in the filter, and plays with the next write.
func (s *convertSink) ConvertsRate() bool { return s.conv.rs != nil }

// Latency is the wrapped sink's and what the converter holds: how long
// the last sample written waits to be heard.
func (s *convertSink) Latency() time.Duration {
	return latencyOf(s.sink) + time.Duration(s.held.Load())
}
