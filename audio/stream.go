package audio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// PortAudioSource captures from a PortAudio input device and delivers mono
// samples at the wire rate.
type PortAudioSource struct {
	o      Options
	log    *slog.Logger
	open   func() (devIn, error)
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	dev     devIn
	conv    *toWire
	pending []int16
	off     int
	closing atomic.Bool
	closed  bool

	cur       atomic.Pointer[openDevice]
	overflows atomic.Int64
	reopens   atomic.Int64
}

// openDevice is the device a stream has open, for lock-free queries.
type openDevice struct {
	dev Device
	fmt Format
	lat time.Duration
}

// deviceLatency is what a device stream reports as its latency (0 when it
// reports none, as test fakes).
func deviceLatency(d any) time.Duration {
	if l, ok := d.(interface{ latency() time.Duration }); ok {
		return l.latency()
	}
	return 0
}

// Latency is what PortAudio reports for the open device: how old the
// newest sample a Read returns is (0 while reopening). The echo canceller
// aligns what was played with what is heard by it.
func (s *PortAudioSource) Latency() time.Duration {
	if d := s.cur.Load(); d != nil {
		return d.lat
	}
	return 0
}

// OpenPortAudioSource opens the capture device o selects, at a rate and
// channel count it supports, and converts to mono at o.Rate. If the device
// is missing or cannot be opened it retries with backoff (o.Retry) until it
// can, or until ctx ends. ctx bounds the whole life of the source: a device
// that fails mid-stream is reopened the same way, and once ctx is done Read
// returns an error.
func OpenPortAudioSource(ctx context.Context, o Options) (*PortAudioSource, error) {
	o = o.withDefaults()
	return newSource(ctx, o, func() (devIn, error) { return openPA(o, true) })
}

func newSource(ctx context.Context, o Options, open func() (devIn, error)) (*PortAudioSource, error) {
	s := &PortAudioSource{o: o, log: o.Logger, open: open}
	s.ctx, s.cancel = context.WithCancel(ctx)
	if err := s.connect(); err != nil {
		s.cancel()
		return nil, err
	}
	return s, nil
}

// connect opens the device (with retries) and a converter for its format.
func (s *PortAudioSource) connect() error {
	dev, err := retryOpen(s.ctx, s.o, "input", s.open)
	if err != nil {
		return err
	}
	conv, err := newToWire(dev.format(), s.o.Rate, s.o.Quality)
	if err != nil {
		dev.close()
		return fmt.Errorf("audio: input device %s: %w", dev.device().Name, err)
	}
	s.dev, s.conv = dev, conv
	s.cur.Store(&openDevice{dev.device(), dev.format(), deviceLatency(dev)})
	s.log.Debug("capture device open", "device", dev.device().Name, "device_format", dev.format().String(), "rate", s.o.Rate)
	return nil
}

// drop closes the current device (after a failure, or on Close). Samples
// still inside the resampler are kept.
func (s *PortAudioSource) drop() {
	if s.dev == nil {
		return
	}
	if err := s.dev.close(); err != nil {
		s.log.Debug("closing capture device", "err", err)
	}
	s.dev = nil
	s.cur.Store(nil)
	if s.conv != nil {
		s.pending, _ = s.conv.flush(s.pending)
		s.conv.close()
		s.conv = nil
	}
}

// Device is the device currently open (the zero Device while reopening
// or after Close).
func (s *PortAudioSource) Device() Device {
	if d := s.cur.Load(); d != nil {
		return d.dev
	}
	return Device{}
}

// DeviceFormat is the rate and channel count the device was opened with
// (the zero Format while reopening or after Close).
func (s *PortAudioSource) DeviceFormat() Format {
	if d := s.cur.Load(); d != nil {
		return d.fmt
	}
	return Format{}
}

// Overflows counts device buffers lost because Read was not called often
// enough; Reopens counts devices reopened after a failure.
func (s *PortAudioSource) Overflows() int64 { return s.overflows.Load() }

// Reopens counts how many times the device was reopened after a failure.
func (s *PortAudioSource) Reopens() int64 { return s.reopens.Load() }

// Read blocks until samples are available and copies up to len(p) of them.
func (s *PortAudioSource) Read(p []int16) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.closing.Load() {
		return 0, ErrClosed
	}
	for s.off >= len(s.pending) {
		if s.closing.Load() {
			return 0, ErrClosed
		}
		if err := s.ctx.Err(); err != nil {
			return 0, fmt.Errorf("audio: capture: %w", err)
		}
		if s.dev == nil {
			s.reopens.Add(1)
			if err := s.connect(); err != nil {
				if s.closing.Load() {
					return 0, ErrClosed
				}
				return 0, err
			}
			continue
		}
		frames, err := s.dev.read()
		if err != nil {
			if transient(err) {
				s.overflows.Add(1)
				continue
			}
			s.log.Warn("capture device failed; reopening", "device", s.dev.device().Name, "err", err)
			s.pending, s.off = s.pending[:0], 0
			s.drop()
			continue
		}
		s.pending, s.off = s.pending[:0], 0
		if s.pending, err = s.conv.append(s.pending, frames); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.pending[s.off:])
	s.off += n
	return n, nil
}

// Close stops capturing, releases the device and unblocks a pending Read
// (including one waiting to reopen the device).
func (s *PortAudioSource) Close() error {
	s.closing.Store(true)
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.drop()
	return nil
}

// PortAudioSink plays samples of Options.Rate and Options.Channels
// (interleaved) on a PortAudio output device.
type PortAudioSink struct {
	o      Options
	log    *slog.Logger
	open   func() (devOut, error)
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	dev     devOut
	conv    *fromWire
	frames  []int16
	closing atomic.Bool
	closed  bool

	cur        atomic.Pointer[openDevice]
	held       atomic.Int64 // the converter's delay after the last write
	underflows atomic.Int64
	reopens    atomic.Int64
}

// OpenPortAudioSink opens the playback device o selects, at o.Rate and
// o.Channels when it takes them, else at a rate and channel count it
// supports (logged, at Info); Write takes frames of o.Rate and o.Channels
// and converts them to the device's. Missing devices are retried as for OpenPortAudioSource,
// and ctx bounds the sink's life the same way.
func OpenPortAudioSink(ctx context.Context, o Options) (*PortAudioSink, error) {
	o = o.withDefaults()
	return newSink(ctx, o, func() (devOut, error) { return openPA(o, false) })
}

func newSink(ctx context.Context, o Options, open func() (devOut, error)) (*PortAudioSink, error) {
	s := &PortAudioSink{o: o, log: o.Logger, open: open}
	s.ctx, s.cancel = context.WithCancel(ctx)
	if err := s.connect(); err != nil {
		s.cancel()
		return nil, err
	}
	return s, nil
}

func (s *PortAudioSink) connect() error {
	dev, err := retryOpen(s.ctx, s.o, "output", s.open)
	if err != nil {
		return err
	}
	want := s.Format()
	conv, err := newFromWire(dev.format(), want, s.o.Quality)
	if err != nil {
		dev.close()
		return fmt.Errorf("audio: output device %s: %w", dev.device().Name, err)
	}
	s.dev, s.conv = dev, conv
	s.cur.Store(&openDevice{dev.device(), dev.format(), deviceLatency(dev)})
	if s.o.OnOpen != nil {
		s.o.OnOpen(dev.device(), dev.format())
	}
	if f := dev.format(); f != want {
		s.log.Info("the speaker does not take the output's format; it is opened at one it does and the mix is converted",
			"device", dev.device().Name, "wanted", want.String(), "device_format", f.String())
	} else {
		s.log.Debug("playback device open", "device", dev.device().Name, "device_format", f.String())
	}
	return nil
}

func (s *PortAudioSink) drop() {
	if s.dev == nil {
		return
	}
	if err := s.dev.close(); err != nil {
		s.log.Debug("closing playback device", "err", err)
	}
	s.dev = nil
	s.cur.Store(nil)
	s.conv.close()
	s.conv = nil
}

// ConvertsRate reports whether the device is open at another rate than
// Write takes: the end of what was written then waits in the converter,
// and plays with the next write.
func (s *PortAudioSink) ConvertsRate() bool {
	d := s.cur.Load()
	return d != nil && d.fmt.Rate != s.o.Rate
}

// Format is what Write takes: Options.Rate and Options.Channels.
func (s *PortAudioSink) Format() Format { return Format{Rate: s.o.Rate, Channels: s.o.Channels} }

// Device is the device currently open (the zero Device while reopening
// or after Close).
func (s *PortAudioSink) Device() Device {
	if d := s.cur.Load(); d != nil {
		return d.dev
	}
	return Device{}
}

// DeviceFormat is the rate and channel count the device was opened with
// (the zero Format while reopening or after Close).
func (s *PortAudioSink) DeviceFormat() Format {
	if d := s.cur.Load(); d != nil {
		return d.fmt
	}
	return Format{}
}

// Latency is what PortAudio reports for the open device, and what the
// rate converter holds when the device runs at another rate: how long a
// sample written into a full buffer waits before it is heard (0 while
// reopening).
func (s *PortAudioSink) Latency() time.Duration {
	if d := s.cur.Load(); d != nil {
		return d.lat + time.Duration(s.held.Load())
	}
	return 0
}

// Underflows counts writes that found the device starved (a gap was heard).
func (s *PortAudioSink) Underflows() int64 { return s.underflows.Load() }

// Reopens counts how many times the device was reopened after a failure.
func (s *PortAudioSink) Reopens() int64 { return s.reopens.Load() }

// Write converts p and writes it to the device, blocking while the device
// buffer is full. If the device fails, it is reopened and the samples of
// that write are dropped.
func (s *PortAudioSink) Write(p []int16) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.closing.Load() {
		return 0, ErrClosed
	}
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("audio: playback: %w", err)
	}
	if s.dev == nil {
		s.reopens.Add(1)
		if err := s.connect(); err != nil {
			if s.closing.Load() {
				return 0, ErrClosed
			}
			return 0, err
		}
	}
	var err error
	if s.frames, err = s.conv.append(s.frames[:0], p); err != nil {
		return 0, err
	}
	s.held.Store(int64(s.conv.delay()))
	if err := s.dev.write(s.frames); err != nil {
		if transient(err) {
			s.underflows.Add(1)
		} else {
			s.log.Warn("playback device failed; reopening", "device", s.dev.device().Name, "err", err)
			s.drop()
		}
	}
	return len(p), nil
}

// Close plays what is still buffered, then releases the device.
func (s *PortAudioSink) Close() error {
	s.closing.Store(true)
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.dev == nil {
		return nil
	}
	var err error
	if s.frames, err = s.conv.flush(s.frames[:0]); err == nil {
		if werr := s.dev.write(s.frames); werr != nil && !transient(werr) {
			err = werr
		}
	}
	dev := s.dev.device()
	cerr := s.dev.close()
	s.dev = nil
	s.cur.Store(nil)
	s.conv.close()
	s.conv = nil
	if err = errors.Join(err, cerr); err != nil {
		return fmt.Errorf("audio: close output device %q: %w", dev.Name, err)
	}
	return nil
}
