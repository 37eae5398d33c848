package capture

import (
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
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
	d := t.Sub(r.epoch)
	return (int64(d)*int64(r.rate) + int64(time.Second)/2) / int64(time.Second)
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
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.inRun || now.After(r.runEnd.Add(clockJump/2)) {
		r.run.restart() // the speaker ran dry: a new run
		r.inRun, r.runN = true, 0
	}
	r.run.bound(now.Add(lat), len(p))
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
	r.runEnd = r.run.anchor.Add(r.run.dur(r.runN))
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
func TapSink(sink audio.Sink, ref *Reference) audio.Sink {
	return &tapSink{sink: sink, ref: ref}
}

type tapSink struct {
	sink audio.Sink
	ref  *Reference
}

func (t *tapSink) Write(p []int16) (int, error) {
	n, err := t.sink.Write(p)
	if n > 0 {
		t.ref.Played(p[:n], LatencyOf(t.sink))
	}
	return n, err
}

func (t *tapSink) Close() error           { return t.sink.Close() }
func (t *tapSink) Latency() time.Duration { return LatencyOf(t.sink) }
