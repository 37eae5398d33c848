package audio

import (
	"context"
	"sync"
	"time"
)

// pacer makes a stream take real time: after n samples at rate it waits
// until start + n/rate of wall time has passed. Falling behind (a slow
// consumer) is not made up for by bursting: if the stream is more than
// maxLag late, the schedule restarts from now.
type pacer struct {
	rate  int
	start time.Time
	n     int64
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	stop  func() // ends a pending sleep for good
}

const maxLag = 500 * time.Millisecond

func newPacer(rate int) *pacer {
	s := newSleeper()
	return &pacer{rate: rate, now: time.Now, sleep: s.sleep, stop: s.close}
}

// A sleeper is a pacer's one timer, made once and reused for every wait
// (timerFD on Linux, a Go timer elsewhere).
type sleeper interface {
	// sleep waits d, or until ctx is done or close is called.
	sleep(ctx context.Context, d time.Duration) error
	close()
}

func (p *pacer) wait(ctx context.Context, samples int) error {
	now := p.now()
	if p.start.IsZero() {
		p.start = now
	}
	p.n += int64(samples)
	due := p.start.Add(time.Duration(p.n * int64(time.Second) / int64(p.rate)))
	d := due.Sub(now)
	if d < -maxLag {
		p.start, p.n = now, 0
		return nil
	}
	if d <= 0 {
		return nil
	}
	return p.sleep(ctx, d)
}

// goTimer waits on one Go timer, made once and reset for every wait: a
// timer that stays in the runtime's heap wakes the poller without an extra
// system call each time.
type goTimer struct{ t *time.Timer }

func (g *goTimer) sleep(ctx context.Context, d time.Duration) error {
	if g.t == nil {
		g.t = time.NewTimer(d)
	} else {
		g.t.Reset(d)
	}
	select {
	case <-g.t.C:
		return nil
	case <-ctx.Done():
		g.t.Stop()
		return ctx.Err()
	}
}

func (g *goTimer) close() {} // the caller's ctx ends the wait

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Paced wraps src so that Read delivers samples no faster than rate per
// second of wall time, measured from the first Read (WireRate when rate is
// not positive). Use it when the underlying device is not a clock (headless
// ALSA, files). Close stops a
// pending wait and closes src.
func Paced(src Source, rate int) Source {
	l, _ := src.(latencer) // once: a failed assertion costs a table lookup every frame
	return &pacedSource{src: src, lat: l, gate: newGate(rate)}
}

// PacedSink wraps sink so that Write accepts samples no faster than rate per
// second of wall time, the way a real sound card would.
func PacedSink(sink Sink, rate int) Sink {
	return &pacedSink{sink: sink, gate: newGate(rate)}
}

// gate serialises a stream's calls and holds each one until its samples are
// due; close ends a pending wait.
type gate struct {
	p      *pacer
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

func newGate(rate int) *gate {
	if rate <= 0 {
		rate = WireRate
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &gate{p: newPacer(rate), ctx: ctx, cancel: cancel}
}

// pass runs io, then waits until the samples it moved are due. A wait cut
// short by Close still reports them; the next call reports the close.
func (g *gate) pass(io func() (int, error)) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, err := io()
	if n > 0 {
		_ = g.p.wait(g.ctx, n)
	}
	return n, err
}

// close ends a pending wait and every later one.
func (g *gate) close() {
	g.cancel()
	g.p.stop()
}

type pacedSource struct {
	src Source
	lat latencer // src, when it has a latency
	*gate
}

type latencer interface{ Latency() time.Duration }

func (s *pacedSource) Read(p []int16) (int, error) {
	return s.pass(func() (int, error) { return s.src.Read(p) })
}

func (s *pacedSource) Close() error {
	s.gate.close()
	return s.src.Close()
}

type pacedSink struct {
	sink Sink
	*gate
}

func (s *pacedSink) Write(p []int16) (int, error) {
	return s.pass(func() (int, error) { return s.sink.Write(p) })
}

func (s *pacedSink) Close() error {
	s.gate.close()
	return s.sink.Close()
}

// latencyOf is x's Latency (see Latencer in package audio/capture), or 0.
func latencyOf(x any) time.Duration {
	if l, ok := x.(latencer); ok {
		return l.Latency()
	}
	return 0
}

// Latency is the wrapped source's.
func (s *pacedSource) Latency() time.Duration {
	if s.lat == nil {
		return 0
	}
	return s.lat.Latency()
}

// Latency is the wrapped sink's.
func (s *pacedSink) Latency() time.Duration { return latencyOf(s.sink) }

// ConvertsRate is the wrapped sink's (see PortAudioSink.ConvertsRate).
func (s *pacedSink) ConvertsRate() bool {
	c, ok := s.sink.(interface{ ConvertsRate() bool })
	return ok && c.ConvertsRate()
}
