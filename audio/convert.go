package audio

import "github.com/agenthost/agenthost/audio/resample"

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

// fromWire turns mono wire-rate samples into interleaved device frames:
// the rate is converted first, then the channel is copied to every device
// channel.
type fromWire struct {
	channels int
	rs       *resample.Resampler
	tmp      []int16
}

func newFromWire(dev Format, wireRate int, q resample.Quality) (*fromWire, error) {
	c := &fromWire{channels: dev.Channels}
	if dev.Rate != wireRate {
		rs, err := resample.New(wireRate, dev.Rate, 1, q)
		if err != nil {
			return nil, err
		}
		c.rs = rs
	}
	return c, nil
}

func (c *fromWire) append(dst, mono []int16) ([]int16, error) {
	if c.rs != nil {
		var err error
		if c.tmp, err = c.rs.Append(c.tmp[:0], mono); err != nil {
			return dst, err
		}
		mono = c.tmp
	}
	return upmix(dst, mono, c.channels), nil
}

func (c *fromWire) flush(dst []int16) ([]int16, error) {
	if c.rs == nil {
		return dst, nil
	}
	var err error
	if c.tmp, err = c.rs.Flush(c.tmp[:0]); err != nil {
		return dst, err
	}
	return upmix(dst, c.tmp, c.channels), nil
}

func (c *fromWire) close() {
	if c.rs != nil {
		c.rs.Close()
	}
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
