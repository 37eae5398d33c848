// Package capture is the microphone's processing chain. A Chain reads a
// source in whole 10 ms frames (as many as its reader asks for at once),
// processes them 10 ms at a time, stamps each with the time its first sample
// reached the microphone, and passes it through stages that change it in
// place; it is itself an audio.Source, so what reads the microphone (the
// conversation) reads the chain instead.
//
// The stages, in the order the host builds them:
//
//   - mute: a microphone muted by the owner stops here, before anything
//     else sees a sample (the frame becomes silence);
//   - Echo: cancels what the speaker plays (speexdsp's MDF filter after a
//     bulk delay search, then a spectral residual echo suppressor), using
//     the Reference that TapSink fills from the playback path; it rests
//     (passes the microphone untouched) while the speaker is silent;
//   - Denoise: noise suppression (speexdsp's preprocessor);
//   - Gain: a fixed gain;
//   - taps, stages that only read: while idle the wake-word detector is fed
//     here; in a turn the frames go on to the encoder.
//
// Each stage is off unless configured (audio.capture in the configuration)
// and can be measured alone (see the benchmarks and the echo room in
// package audio/echoroom).
package capture

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// FrameDuration is the length of the frames stages process.
const FrameDuration = 10 * time.Millisecond

// FrameSize is the number of samples in one frame at rate.
func FrameSize(rate int) int { return rate / 100 }

// Frame is 10 ms of mono samples at the wire rate.
type Frame struct {
	// PCM is the samples; a stage changes them in place.
	PCM []int16
	// At is when PCM[0] reached the microphone (zero when unknown).
	At time.Time
	// Resync: the microphone's timeline jumped before this frame (samples
	// were lost, or the reader fell behind for a while), so At is not
	// continuous with the frame before.
	Resync bool
	// OwnSound: a stage took the frame for the speaker's own sound alone,
	// no voice in the room (the echo canceller's suppressor; see
	// Echo.NearSpeech). The wake word, while the speaker sounds, wants a
	// voice near a detection (Chain.TakeVoiced).
	OwnSound bool
}

// Stage processes the microphone frame by frame.
type Stage interface {
	// Name is what logs and metrics call the stage ("echo", "denoise").
	Name() string
	// Process changes f.PCM in place (or only reads it, for a tap).
	Process(f *Frame)
	// Close releases what the stage holds; Process is not called after.
	Close() error
}

// Latencer is implemented by sources and sinks that know the device's
// latency: for a source, how long ago the newest sample it delivers
// reached the microphone; for a sink, how long a sample written when its
// buffer is full waits before it is heard.
type Latencer interface {
	Latency() time.Duration
}

// LatencyOf is x's Latency, or 0 when x does not report one.
func LatencyOf(x any) time.Duration {
	if l, ok := x.(Latencer); ok {
		return l.Latency()
	}
	return 0
}

// Chain is an audio.Source that runs a source's samples through stages.
type Chain struct {
	src    audio.Source
	lat    Latencer // src, when it has a latency
	stages []Stage
	clock  clock
	rate   int

	mu      sync.Mutex
	frame   Frame
	block   []int16 // the last read of the source, processed in frames
	pending []int16 // processed samples not yet read
	voiced  bool    // a frame of block may hold a voice (not OwnSound)
	heard   bool    // samples read since TakeVoiced came from such a block
	closed  bool
}

// NewChain reads src (mono at rate) in 10 ms frames through stages, in
// order. The chain owns the stages and src: Close closes them.
func NewChain(src audio.Source, rate int, stages ...Stage) (*Chain, error) {
	if rate <= 0 || rate%100 != 0 {
		return nil, fmt.Errorf("capture: rate %d Hz is not a whole number of samples per 10 ms", rate)
	}
	lat, _ := src.(Latencer) // once: an assertion looks up a table every frame
	return &Chain{src: src, lat: lat, stages: stages, rate: rate, clock: clock{rate: rate}}, nil
}

// Read delivers processed samples. It reads the source as many whole
// frames at a time as p holds (at least one): a reader's 60 ms frame is one
// read, one wake-up, not six. The stages still take 10 ms frames, each
// stamped as if it had been read alone.
func (c *Chain) Read(p []int16) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, audio.ErrClosed
	}
	if len(c.pending) == 0 {
		size := FrameSize(c.rate)
		k := max(1, len(p)/size)
		if cap(c.block) < k*size {
			c.block = make([]int16, k*size)
		}
		block := c.block[:k*size]
		if _, err := audio.ReadFull(c.src, block); err != nil {
			return 0, err
		}
		now, lat := time.Now(), c.latency()
		c.voiced = false
		for j := 0; j < k; j++ {
			// Frame j's newest sample was (k-1-j) frames before the block's.
			c.frame.PCM = block[j*size : (j+1)*size]
			jumps := c.clock.jumps
			c.frame.At = c.clock.stamp(now, lat+time.Duration(k-1-j)*FrameDuration, size)
			c.frame.Resync = c.clock.jumps != jumps
			c.frame.OwnSound = false
			for _, s := range c.stages {
				s.Process(&c.frame)
			}
			c.voiced = c.voiced || !c.frame.OwnSound
		}
		c.pending = block
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	c.heard = c.heard || c.voiced
	return n, nil
}

// TakeVoiced reports whether the samples read since the last call may hold
// a voice in the room: false only when a stage took every frame they came
// from for the speaker's own sound alone (Frame.OwnSound).
func (c *Chain) TakeVoiced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.heard
	c.heard = false
	return v
}

// Close closes the source and the stages. A Read blocked in the source
// returns once the source is closed.
func (c *Chain) Close() error {
	err := c.src.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return err
	}
	c.closed = true
	for _, s := range c.stages {
		err = errors.Join(err, s.Close())
	}
	return err
}

// Latency is the source's latency plus what the chain holds back.
func (c *Chain) Latency() time.Duration { return c.latency() }

func (c *Chain) latency() time.Duration {
	if c.lat == nil {
		return 0
	}
	return c.lat.Latency()
}
