package capture

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/resample"
)

// Reference is what the speaker played, on a timeline of when it was heard,
// for the echo canceller: the playback path writes every sample it hands
// the speaker (TapSink does it, after the volume gain, which is part of the
// echo path), and the canceller reads, for each microphone frame, what was
// playing when that frame was captured. The two sides meet on the wall
// clock, each corrected by the latency its device reports.
//
// Playback comes in runs: a run starts when the speaker had run dry (the
// first reply after a silence) and goes on while writes keep its buffer
// fed. Silence between runs reads as zeros.
type Reference struct {
	rate int

	mu    sync.Mutex
	ring  []int16
	epoch time.Time // position 0 of the timeline
	hi    int64     // one past the newest position written

	run    clock // when the current run's samples are heard
	inRun  bool
	base   int64 // timeline position of the run's sample 0
	runN   int64 // samples in the run
	runEnd time.Time
	breaks atomic.Int64 // runs that began after the speaker ran dry mid-stream
}

// ReferenceSpan is how much of the timeline a Reference keeps: enough for
// the speaker's buffer ahead of the microphone, the microphone's latency
// and the canceller's delay search behind it.
const ReferenceSpan = 4 * time.Second

// maxMove bounds how much of a run is moved when a better latency bound
// shows it is heard earlier than first thought (normally the buffer that a
// run's first writes fill at once).
const maxMove = 500 * time.Millisecond

// NewReference returns an empty reference for mono samples at rate.
func NewReference(rate int) *Reference {
	return &Reference{rate: rate, ring: make([]int16, int(ReferenceSpan.Seconds()*float64(rate))), run: clock{rate: rate}}
}

func (r *Reference) pos(t time.Time) int64 {
	if r.epoch.IsZero() {
		r.epoch = t
	}
	return int64(math.Round(t.Sub(r.epoch).Seconds() * float64(r.rate)))
}

func (r *Reference) slot(p int64) int {
	n := int64(len(r.ring))
	return int(((p % n) + n) % n)
}

// zero clears the timeline in [from, to).
func (r *Reference) zero(from, to int64) {
	if to-from > int64(len(r.ring)) {
		from = to - int64(len(r.ring))
	}
	for p := from; p < to; p++ {
		r.ring[r.slot(p)] = 0
	}
}

// Played records p, just written to a speaker whose buffer, when full,
// holds lat of sound.
func (r *Reference) Played(p []int16, lat time.Duration) {
	r.played(p, lat, time.Now())
}

func (r *Reference) played(p []int16, lat time.Duration, now time.Time) {
	r.playedHeld(p, lat, 0, now)
}

// playedHeld is played for a speaker fed through a filter (a resampler)
// that still holds held of what was written: the end of the write is heard
// lat from now, p ends held before it, and the run goes on to that end
// (a write that gave nothing out is no gap either).
func (r *Reference) playedHeld(p []int16, lat, held time.Duration, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) == 0 {
		if held > 0 && r.inRun && !now.After(r.runEnd.Add(clockJump/2)) {
			r.runEnd = r.run.anchor.Add(r.run.dur(r.runN) + held)
		}
		return
	}
	if !r.inRun || now.After(r.runEnd.Add(clockJump/2)) {
		if r.inRun {
			r.breaks.Add(1)
		}
		r.run.restart() // the speaker ran dry: a new run
		r.inRun, r.runN = true, 0
	}
	jumps := r.run.jumps
	r.run.bound(now.Add(lat-held), len(p))
	if r.run.jumps != jumps {
		r.breaks.Add(1) // a settled run moved: as good as a new one
	}
	base := r.pos(r.run.anchor)
	if r.runN > 0 && base != r.base {
		r.move(base)
	}
	r.base = base
	start := base + r.runN
	if r.runN == 0 && start > r.hi {
		r.zero(r.hi, start)
	}
	for i, v := range p {
		r.ring[r.slot(start+int64(i))] = v
	}
	r.runN += int64(len(p))
	if end := start + int64(len(p)); end > r.hi || r.runN == int64(len(p)) {
		if end < r.hi {
			r.zero(end, r.hi)
		}
		r.hi = end
	}
	r.runEnd = r.run.anchor.Add(r.run.dur(r.runN) + held)
}

// move shifts the newest part of the current run to start at base.
func (r *Reference) move(base int64) {
	n := min(r.runN, int64(maxMove.Seconds()*float64(r.rate)))
	from := r.base + r.runN - n
	to := base + r.runN - n
	buf := make([]int16, n)
	for i := range buf {
		buf[i] = r.ring[r.slot(from+int64(i))]
	}
	r.zero(min(from, to), max(from, to)+n)
	for i, v := range buf {
		r.ring[r.slot(to+int64(i))] = v
	}
	if end := base + r.runN; end < r.hi {
		r.hi = end
	}
}

// Breaks counts the times the speaker ran dry after it had been fed (an
// underrun: the process was late to write), or its settled timeline
// moved. The new run is placed only as
// well as the device's latency bounds allow, a fraction of a millisecond
// off, which an adaptive filter must learn again.
func (r *Reference) Breaks() int64 { return r.breaks.Load() }

// Read fills dst with what was heard from at on (zeros where the speaker
// was silent or the timeline no longer reaches).
func (r *Reference) Read(dst []int16, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pos(at)
	lo := r.hi - int64(len(r.ring))
	for i := range dst {
		q := p + int64(i)
		if q < lo || q >= r.hi {
			dst[i] = 0
			continue
		}
		dst[i] = r.ring[r.slot(q)]
	}
}

// TapSink returns a sink that writes to sink and records what it wrote in
// ref, with the latency sink reports (see Latencer). Put it next to the
// device: anything that changes the sound after the tap (a volume gain)
// would be missing from the reference.
//
// While nothing is played it keeps the device fed with silence (keep at a
// time; 0 turns that off): a speaker that runs dry restarts somewhere new
// in its buffer, a few milliseconds off from where the last reply played,
// and an adaptive filter that learned the room sample by sample cancels
// nothing until it has learned that shift. Close stops the feeding.
func TapSink(sink audio.Sink, ref *Reference, rate int, keep time.Duration) audio.Sink {
	t, _ := TapSinkFormat(sink, ref, audio.Format{Rate: rate, Channels: 1}, keep)
	return t
}

// TapSinkFormat is TapSink for a speaker that takes interleaved frames of
// f (48 kHz stereo, say): what is written is recorded in ref as the
// reference is kept, mono at its rate: the channels averaged, the rate
// converted by libsoxr (whose delay is taken off the device's latency), so
// that the reference is still exactly what the speaker plays. At ref's own
// format it records the samples as they are.
func TapSinkFormat(sink audio.Sink, ref *Reference, f audio.Format, keep time.Duration) (audio.Sink, error) {
	t := &tapSink{sink: sink, ref: ref, ch: max(f.Channels, 1), done: make(chan struct{}), turn: make(chan struct{}, 1), last: time.Now()}
	if f.Rate != ref.rate {
		rs, err := resample.New(f.Rate, ref.rate, 1, resample.High)
		if err != nil {
			return nil, fmt.Errorf("capture: the speaker's %v to the echo reference's %d Hz: %w", f, ref.rate, err)
		}
		t.rs = rs
	}
	if n := int(keep.Seconds()*float64(f.Rate)) * t.ch; n > 0 {
		t.silence = make([]int16, n)
		t.wg.Add(1)
		go t.keep(keep)
	}
	return t, nil
}

type tapSink struct {
	sink    audio.Sink
	ref     *Reference
	ch      int                 // the speaker's channels
	rs      *resample.Resampler // nil at the reference's rate
	mono    []int16
	conv    []int16
	silence []int16
	done    chan struct{}
	wg      sync.WaitGroup

	// turn is held over a write to the device and its record in the
	// reference, and guards what follows. A channel, not a mutex: a write
	// holds it while the device blocks, and a goroutine waiting for a
	// channel is blocked for testing/synctest (the echo room in virtual
	// time), where one waiting for a mutex would keep the clock still.
	turn   chan struct{}
	last   time.Time // when the last write returned
	closed bool

	// When the last record was made, the device's latency then, and when
	// the speaker runs dry if nothing more is written.
	at, dry time.Time
	lat     time.Duration
}

func (t *tapSink) lock()   { t.turn <- struct{}{} }
func (t *tapSink) unlock() { <-t.turn }

func (t *tapSink) Write(p []int16) (int, error) {
	t.lock()
	defer t.unlock()
	return t.writeLocked(p)
}

func (t *tapSink) writeLocked(p []int16) (int, error) {
	if t.rs != nil && !convertsRate(t.sink) && !t.dry.IsZero() && time.Now().After(t.dry.Add(clockJump/2)) {
		t.flushHeld()
	}
	n, err := t.sink.Write(p)
	if n > 0 {
		t.record(p[:n-n%t.ch])
	}
	t.last = time.Now()
	return n, err
}

// convertsRate: x converts the rate itself (audio.ConvertSink, a PortAudio
// sink open at another rate), so the end of a sound waits in its filter
// too and plays after a gap, just before the next sound, where the tap's
// own filter puts it as well.
func convertsRate(x any) bool {
	c, ok := x.(interface{ ConvertsRate() bool })
	return ok && c.ConvertsRate()
}

// flushHeld puts what the resampler still holds in the reference where it
// was heard, at the end of the last write, and clears the filter: the
// speaker ran dry, and that tail does not belong before the next sound.
func (t *tapSink) flushHeld() {
	var err error
	if t.conv, err = t.rs.Flush(t.conv[:0]); err != nil {
		return // closed
	}
	t.ref.playedHeld(t.conv, t.lat, 0, t.at)
	t.rs.Reset()
	t.dry = time.Time{}
}

// record puts what was just played in the reference, mono at its rate.
func (t *tapSink) record(p []int16) {
	lat, now := LatencyOf(t.sink), time.Now()
	t.at, t.lat, t.dry = now, lat, now.Add(lat)
	if t.ch > 1 {
		t.mono = audio.Remix(t.mono[:0], p, t.ch, 1)
		p = t.mono
	}
	var held time.Duration
	if t.rs != nil {
		var err error
		if t.conv, err = t.rs.Append(t.conv[:0], p); err != nil {
			return // closed: nothing more is played
		}
		p = t.conv
		// What the filter still holds was played as well: the samples
		// out so far end that much before the end of the write.
		held = time.Duration(t.rs.Delay() * float64(time.Second) / float64(t.ref.rate))
	}
	t.ref.playedHeld(p, lat, held, now)
}

// keep writes silence whenever nothing was written for a while.
func (t *tapSink) keep(every time.Duration) {
	defer t.wg.Done()
	tick := time.NewTicker(every / 2)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		t.lock()
		if !t.closed && time.Since(t.last) >= every/2 {
			if _, err := t.writeLocked(t.silence); err != nil {
				t.last = time.Now().Add(time.Second) // a failing device: try again later
			}
		}
		t.unlock()
	}
}

func (t *tapSink) Close() error {
	t.lock()
	if !t.closed {
		t.closed = true
		close(t.done)
	}
	t.unlock()
	t.wg.Wait()
	t.lock()
	if t.rs != nil {
		t.rs.Close()
	}
	t.unlock()
	return t.sink.Close()
}

func (t *tapSink) Latency() time.Duration { return LatencyOf(t.sink) }
