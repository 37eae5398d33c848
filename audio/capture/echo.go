package capture

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// EchoOptions configure the echo canceller.
type EchoOptions struct {
	// Rate is the sample rate (default 16000).
	Rate int
	// Tail is the length of the echo path the adaptive filter models, after
	// the bulk delay is taken out (default 100 ms). Longer tails model more
	// reverberation but converge more slowly.
	Tail time.Duration
	// MaxDelay is how far the bulk delay search looks beyond what the
	// devices report (default 400 ms); 0 turns the search off.
	MaxDelay time.Duration
	// NoResidual turns off suppressing the echo the filter leaves (on by
	// default: our spectral suppressor, residual.go).
	NoResidual bool
	// SpeexResidual suppresses it with speexdsp's suppressor instead (the
	// canceller before issue 24; it takes 2–6 dB off a reverberant room's
	// residual where ours takes 10–20).
	SpeexResidual bool
	// Hold holds the output down by 30 dB while the filter learns (after a
	// start, a move or an underrun) until it takes 25 dB off: the
	// canceller before issue 24. Near speech is lost with the echo then,
	// for up to 6 s in a reverberant room. Without it (and with the
	// residual suppressor) the output is held down until the delay search
	// found the echo, the suppressor learnt its level and 2 s of sound
	// were played; near speech the suppressor tells from echo passes
	// (before the delay is found, told against the loudest the echo could
	// be at any lag), and once the suppressor has a model of the echo the
	// hold is per band: a band of the microphone 5 dB above the echo
	// expected there passes, and so does one 1.5 dB above it, in a frame
	// above its echo, where the filter's output stands 5 dB above the
	// residual it leaves (once the delay is found).
	Hold bool
	// Log, if set, hears when the delay search moves the filter.
	Log *slog.Logger
}

// Bounds of the canceller's settings.
const (
	MinTail     = 20 * time.Millisecond
	MaxTail     = 500 * time.Millisecond
	MaxMaxDelay = 1500 * time.Millisecond
)

func (o EchoOptions) withDefaults() EchoOptions {
	if o.Rate <= 0 {
		o.Rate = 16000
	}
	if o.Tail <= 0 {
		o.Tail = DefaultTail
	}
	return o
}

// DefaultTail is the filter's tail when none is configured: in rooms of
// RT60 0.2–0.6 s, 200 ms leaves less to the residual suppressor than 100 ms
// and still converges within about 2 s (BenchmarkWorldEcho).
const DefaultTail = 200 * time.Millisecond

// DefaultMaxDelay is the delay search's range when none is configured.
const DefaultMaxDelay = 400 * time.Millisecond

// delayMargin is how much earlier than the direct path's delay the
// filter's window starts: the loudspeaker's and the search's filters ring
// a little before it, and a path that changes may come a little nearer.
const delayMargin = 2 // frames

// Echo is the echo-cancelling stage: speexdsp's MDF adaptive filter on the
// reference delayed by a bulk delay search, then a residual echo
// suppressor (residual.go). While nothing has been played for longer than
// its echo lasts (restAfter), it rests: the microphone passes as it came,
// and the filters keep what they learnt for the next reply.
type Echo struct {
	ref   *Reference
	o     EchoOptions
	frame int
	aec   *speexEcho
	res   *speexPre
	post  *residual
	est   *delayEstimator

	hist    []int16 // the reference, a ring of samples for the delay and the replay
	reach   int     // how far back the delay search looks: its range and 2 frames, samples
	past    []int16 // the microphone of the last replayFrames frames the filter took, a ring
	pastAt  int     // frames the filter took
	pastN   int     // how many of the last of them follow on from one another
	t       int     // frames seen
	far     []int16 // the reference at the frame's time
	play    []int16 // the delayed reference given to the filter
	aligned []int16 // the reference at the direct path's delay, for the suppressor
	postLag int     // the delay of aligned, samples
	out     []int16
	shift   int     // the direct path's delay the window is placed by, samples
	mic     []int16 // this frame's microphone, as it came
	last    []int16 // and the frame before's
	prime   []int16 // the frame before and its reference, for the filters' wake
	resting bool    // the far end is silent and its echo has died out: the filters rest
	relearn bool    // a hold came while resting: it starts when the filters wake

	warm    int     // frames with sound played since the filter (re)started
	held    bool    // the output is held down while the filter learns
	strict  bool    // held whole: found again at another delay, the filter learns it
	before  keep    // the suppressor's model when the echo path changed
	sIn     float64 // recent echo energy into the canceller, while strict
	sOut    float64 // and out of it, without the hold
	started bool    // that hold ended once since the start (never reset: a reopened device gets a new Echo)
	eIn     float64 // recent echo energy into the filter, while held
	eOut    float64 // and out of it
	lastFar int     // the last frame with sound played
	ey, ee  float64 // recent products of the filter's output and its echo estimate
	yy      float64 // and the estimate's energy, to tell a diverged filter
	dd      float64 // and the microphone's
	divRun  int     // frames in a row the filter looked diverged
	ir      []int32 // the filter's impulse response, looked at now and then
	irE     float64 // its energy at the last look (0: just started)
	irLook  int     // frames to the next look
	slaps   int     // times speexdsp was seen to reset itself
	breaks  int64   // the reference's breaks seen

	delay atomic.Int64 // the applied delay, for Delay
	moves atomic.Int64 // times the filter's window moved, for Moves
}

// NewEcho returns a canceller that reads what was played from ref (nil
// when only Cancel is used, as benchmarks do).
func NewEcho(ref *Reference, o EchoOptions) (*Echo, error) {
	o = o.withDefaults()
	if o.Rate%100 != 0 {
		return nil, fmt.Errorf("echo canceller: rate %d Hz is not a whole number of samples per 10 ms", o.Rate)
	}
	if o.Tail < MinTail || o.Tail > MaxTail {
		return nil, fmt.Errorf("echo canceller: tail %s is outside %s…%s", o.Tail, MinTail, MaxTail)
	}
	if o.MaxDelay < 0 || o.MaxDelay > MaxMaxDelay {
		return nil, fmt.Errorf("echo canceller: max delay %s is outside 0…%s", o.MaxDelay, MaxMaxDelay)
	}
	frame := FrameSize(o.Rate)
	tail := int(o.Tail.Seconds() * float64(o.Rate))
	aec, err := newSpeexEcho(frame, tail, o.Rate)
	if err != nil {
		return nil, fmt.Errorf("echo canceller: %w", err)
	}
	e := &Echo{ref: ref, o: o, frame: frame, aec: aec, held: true}
	maxLag := int(o.MaxDelay.Seconds() * float64(o.Rate))
	switch {
	case o.NoResidual:
	case !o.SpeexResidual:
		e.post = newResidual(frame, (maxLag+frame-1)/frame+delayMargin)
	default:
		if e.res, err = newSpeexPre(frame, o.Rate); err != nil {
			aec.close()
			return nil, fmt.Errorf("echo canceller: %w", err)
		}
		e.res.setEcho(aec)
		e.res.set(ppNoiseSuppress, 0) // echo only: noise is the Denoise stage's
	}
	if maxLag > 0 {
		if e.est, err = newDelayEstimator(frame, o.Rate, maxLag); err != nil {
			e.Close()
			return nil, fmt.Errorf("echo canceller: %w", err)
		}
	}
	e.reach = maxLag + 2*frame
	e.hist = make([]int16, e.reach+replayFrames*frame)
	e.past = make([]int16, replayFrames*frame)
	e.far = make([]int16, frame)
	e.play = make([]int16, frame)
	e.aligned = make([]int16, frame)
	e.out = make([]int16, frame)
	e.mic = make([]int16, frame)
	e.last = make([]int16, frame)
	e.prime = make([]int16, 2*frame)
	return e, nil
}

// Name implements Stage.
func (e *Echo) Name() string { return "echo" }

// NearSpeech reports whether the last frame cancelled may hold someone in
// the room speaking: the residual suppressor took it for near speech (it
// tells a voice from the echo it expects), or nothing played long enough
// for the canceller to rest (all the microphone hears is the room). False
// only where the frame is taken for the speaker's own sound.
func (e *Echo) NearSpeech() bool {
	return e.resting || e.post == nil || e.post.talking
}

// Process implements Stage: it cancels from f what the speaker played
// when f was captured.
func (e *Echo) Process(f *Frame) {
	if e.ref != nil {
		e.ref.Read(e.far, f.At)
		if f.Resync {
			e.hold() // the microphone's timeline jumped: as after a break
		}
		if b := e.ref.Breaks(); b != e.breaks {
			// The speaker ran dry and restarted a little off: the filter
			// adapts to it without starting over; hold the output down
			// meanwhile, as at the start.
			e.breaks = b
			e.hold()
			if e.o.Log != nil {
				e.o.Log.Debug("the speaker ran dry or its clock moved; the canceller holds its output down while it adapts", "component", "capture", "breaks", b)
			}
		}
	}
	e.Cancel(f.PCM, e.far)
	f.OwnSound = !e.NearSpeech()
}

// Cancel removes from mic (one frame, in place) the echo of far, what
// the speaker played at the same time as far as the devices tell.
func (e *Echo) Cancel(mic, far []int16) {
	if len(mic) != e.frame || len(far) != e.frame {
		return
	}
	at := e.t * e.frame % len(e.hist)
	for i, v := range far {
		e.hist[(at+i)%len(e.hist)] = v
	}
	e.t++
	copy(e.mic, mic)
	defer func() { e.mic, e.last = e.last, e.mic }()
	sound := loud(far)
	if !sound && (e.t-e.lastFar)*e.frame > e.restAfter() {
		// Nothing played for longer than the echo lasts: nothing to take
		// off. The filters rest with what they learnt; the microphone
		// passes as it came (as late as the suppressor puts it).
		e.resting = true
		e.pastN = 0
		if e.post != nil || e.res != nil {
			copy(mic, e.last)
		}
		return
	}
	if sound {
		e.lastFar = e.t
	}
	if e.resting {
		// Sound again: the filters take the frame before first (discarded),
		// so that their histories hold what they would had they run.
		e.resting = false
		if e.relearn {
			e.relearn = false
			e.hold()
		}
		prev := (at - e.frame + len(e.hist)) % len(e.hist)
		for i := range e.frame {
			e.prime[e.frame+i] = e.hist[(prev+i)%len(e.hist)]
		}
		copy(e.prime, e.last)
		e.filter(e.prime[:e.frame], e.prime[e.frame:], prev)
	}
	e.filter(mic, far, at)
	if sound {
		e.warm++
	}
	echoing := e.echoing()
	ours := e.post != nil && !e.o.Hold
	if e.held && echoing && e.strict {
		// Found again at another delay: held whole until the filter and
		// the suppressor take strictERLE off every frame, near speech or
		// not (the suppressor's young model takes a word's onsets for it).
		e.sIn = warmDecay*e.sIn + energy(mic)
		e.sOut = warmDecay*e.sOut + energy(e.out)*e.post.unheld
		if e.sIn >= strictERLE*e.sOut {
			e.strict = false
		}
	}
	if e.held && echoing {
		if !ours || !e.post.talking {
			e.eIn = warmDecay*e.eIn + energy(mic)
			out := energy(e.out)
			if ours {
				out *= e.post.unheld // the hold's own attenuation does not count
			}
			e.eOut = warmDecay*e.eOut + out
		}
		learned := e.warm >= warmMin && e.eIn >= warmERLE*e.eOut
		if ours {
			learned = e.found() && e.post.learnt() && e.eIn >= holdERLE*e.eOut && e.warm >= holdMin
		}
		if learned || e.warm >= warmMax {
			e.held, e.started = false, true
			if e.post != nil {
				e.post.changed = false
			}
		}
	}
	if e.held && echoing && (e.relooking() || e.strict || !(ours && (e.post.bandHeld || e.found() && e.post.learnt() && e.post.talking || !e.found() && (e.post.bTalking || e.post.young)))) {
		// The filter is still learning the room: while its echo may be
		// in the microphone, hold the output down rather than pass it
		// (but not near speech, once the suppressor can tell it, nor a
		// frame the suppressor held per band; nor, while the delay
		// search looks again after the echo path changed, a frame
		// whose echo may come at another delay than the suppressor's:
		// it takes a word's onsets through the new delay for near
		// speech).
		for i, v := range e.out {
			e.out[i] = v / warmDiv
		}
	}
	copy(mic, e.out)
}

// filter runs the linear filter, the delay search and the suppressor over
// one frame of mic (the reference's frame is at at in hist) into e.out.
func (e *Echo) filter(mic, far []int16, at int) {
	moved := false          // the filter's window moved
	looked := e.relooking() // the search looked again after the echo path changed
	if e.est != nil {
		if lag, ok := e.est.add(far, mic); ok {
			e.delay.Store(int64(lag) * int64(time.Second) / int64(e.o.Rate))
			if lag < e.window() || lag > e.window()+e.tailSamples()/2 {
				// The echo starts before the filter's window, or so far
				// into it that its reverberation falls out: move the window
				// and start the filter again. (Smaller changes are left
				// alone: the filter covers them, and near speech or a short
				// reply can sway the estimate by a frame or two.)
				e.shift = lag
				moved = true
				e.resetFilter()
				if e.postLag == 0 || e.firstLooking() {
					e.holdFilter() // the first delay found, or corrected: see below
					e.replay(at)
				} else {
					e.hold()
				}
				e.moves.Add(1)
				if e.o.Log != nil {
					e.o.Log.Debug("echo path delay found; the canceller learns the room again", "component", "capture", "delay", time.Duration(e.delay.Load()))
				}
			}
		}
	}
	from := at - e.window() + len(e.hist)
	for i := range e.play {
		e.play[i] = e.hist[(from+i)%len(e.hist)]
	}
	e.aec.cancel(mic, e.play, e.out)
	copy(e.past[e.pastAt%replayFrames*e.frame:], mic)
	e.pastAt++
	e.pastN = min(e.pastN+1, replayFrames)
	if e.slapped(mic) {
		e.slaps++
		// speexdsp started its filter again on its own (it added more
		// than it took off for 50 frames, or its sums overflowed): its
		// output is the microphone as it came. Learn as after a change.
		e.hold()
		e.moves.Add(1)
		if e.o.Log != nil {
			e.o.Log.Debug("speexdsp reset its filter; the canceller learns the room again", "component", "capture")
		}
	} else if e.diverged(mic) {
		// The echo path changed: the filter takes off an echo that is no
		// longer there. speexdsp's filter then adapts as slowly as in
		// double talk; started again it learns the new path at its
		// fastest (and the output is held down meanwhile). The
		// suppressor keeps what it learnt: the echo's level is the same.
		// The delay search looks again (the bulk delay may have moved
		// too: a new output device or buffering); until it found the
		// echo, the output is held whole, and what the filter learns
		// again from, should the echo be elsewhere, comes from now on.
		e.resetFilter()
		e.holdFilter()
		if e.post != nil {
			e.post.changed = true
		}
		if e.est != nil {
			e.est.relook(divRun * e.frame)
			if e.post != nil {
				e.before = e.post.kept()
			}
		}
		e.pastN = min(e.pastN, divRun)
		e.moves.Add(1)
		if e.o.Log != nil {
			e.o.Log.Debug("echo path changed; the canceller learns the room again", "component", "capture")
		}
	}
	if e.res != nil {
		e.res.run(e.out)
	}
	if e.post != nil {
		// The suppressor's reference is aligned with the direct path, not
		// with the filter's window: its model of the echo has no delay.
		lag := 0
		if e.est != nil && e.est.ok {
			lag = e.est.est
		}
		if abs(lag-e.postLag) > e.frame {
			if e.postLag == 0 || e.firstLooking() && (moved || e.est.first.early()) {
				// The first delay found: the suppressor keeps what it
				// learnt (the echo's level, its reference not yet
				// aligned) and goes on learning, aligned, so that near
				// speech is told from echo, and passes the hold, without
				// another half second of far end alone. What it learnt
				// unaligned weighs a tenth: the aligned model soon leads.
				// (So too when the first look corrects the search's
				// filter in the first seconds: the echo's level is the
				// same. After its first 3 s, a correction within the
				// filter's window is as below: a wander of the estimate.)
				e.holdFilter()
				e.post.soften(softenFirst)
			} else if moved {
				e.hold() // the suppressor learns the echo's level again
			} else {
				// The estimate moved within the filter's window: the
				// filter keeps what it learnt, and the suppressor, its
				// reference aligned anew, the echo's level, softened.
				e.post.soften(softenFirst)
			}
			if looked && moved {
				// Found again at another delay after the echo path
				// changed: the suppressor takes back the model it had
				// (what it learnt since, its reference at the old lag,
				// is wrong; the echo's level is the same); the hold
				// holds the output down whole while the filter learns
				// the new lag (see strict), then frames taken for near
				// speech per band too, as after a change.
				e.post.restore(e.before)
				e.post.soften(softenFirst)
				e.post.changed = true
				e.strict, e.sIn, e.sOut = true, 0, 0
			}
			e.postLag = lag
		}
		from := at - e.postLag + len(e.hist)
		for i := range e.aligned {
			e.aligned[i] = e.hist[(from+i)%len(e.hist)]
		}
		e.post.blind = !e.found()
		e.post.starting = !e.started
		e.post.holdBy = 0
		if e.held && !e.o.Hold && e.echoing() {
			e.post.holdBy = 1.0 / warmDiv
		}
		e.post.run(mic, e.aligned, e.out)
	}
}

// replay runs the filter, started again at the first delay found (the
// frame at at is next), over the frames it took before, up to a second,
// its output discarded: it learns the room from them as if it had started
// there. (Not after a later move: the echo path may have changed.)
func (e *Echo) replay(at int) {
	n := min(e.pastN, (len(e.hist)-e.window())/e.frame-1)
	for k := n; k >= 1; k-- {
		from := at - k*e.frame - e.window() + 2*len(e.hist)
		for i := range e.play {
			e.play[i] = e.hist[(from+i)%len(e.hist)]
		}
		j := (e.pastAt - k) % replayFrames * e.frame
		e.aec.cancel(e.past[j:j+e.frame], e.play, e.out)
	}
}

// echoing reports whether the frame may hold echo: sound was played within
// the reference's history and warmTail frames.
func (e *Echo) echoing() bool {
	return (e.t-e.lastFar)*e.frame <= e.reach+warmTail*e.frame
}

// firstLooking reports whether the delay search's first look still looks
// (the first 6 s of sound): a delay found then corrects the first.
func (e *Echo) firstLooking() bool { return e.est != nil && e.est.first != nil }

// relooking reports whether the delay search looks again after the echo
// path changed (found then reports false).
func (e *Echo) relooking() bool { return e.est != nil && e.est.looking() }

// found reports whether the delay search found the echo (or there is
// none), and has not lost it since (the echo path changed).
func (e *Echo) found() bool { return e.est == nil || e.est.ok && !e.relooking() }

// hold starts holding the output down: the filter (and the suppressor)
// start learning.
func (e *Echo) hold() {
	if e.resting {
		e.relearn = true // nothing learns while resting
		return
	}
	e.holdFilter()
	if e.post != nil {
		e.post.reset()
	}
}

// holdFilter holds the output down while the filter alone learns again.
func (e *Echo) holdFilter() {
	e.held, e.warm, e.eIn, e.eOut = true, 0, 0, 0
	e.strict = false
	if e.post != nil {
		e.post.restart()
		e.post.changed = false
	}
}

// A new filter converges in a few seconds of played sound (speexdsp's MDF
// reaches ~15 dB in its first second, ~25 dB in its third). Frames that may
// hold echo are attenuated by 30 dB while it learns, for at most 6 s of
// played sound. With Hold (the canceller before issue 24), until it takes
// 25 dB off the echo (measured on its own input and output, over about the
// last half second), for at least 1 s: near speech is lost with the echo,
// a barge-in during the first reply after a start, a move of the delay or
// an underrun is not heard. With the residual suppressor, until the delay
// search found the echo, the suppressor learnt its level (0.5 s of far end
// alone; at the first delay found it keeps what it learnt unaligned), both
// take 25 dB off while nobody speaks, and 2 s of sound were played;
// meanwhile what the suppressor takes for near speech passes (before the
// delay is found, against the reference's envelope over the search's range),
// and once it has a model of the echo (blind or aligned) the suppressor holds
// per band: a band whose microphone stands 5 dB above its echo expected
// passes (or 1.5 dB above it, the frame above its echo, where the filter's
// output stands 5 dB above its residual), the others are held down by 30 dB
// (after the echo path changed, in frames taken for near speech too).
const (
	warmMin   = 100   // frames of played sound
	warmMax   = 600   // frames of played sound
	warmERLE  = 316.0 // 25 dB, as an energy ratio
	warmDecay = 0.95  // per frame: about the last half second counts
	warmTail  = 15    // frames after the last sound that may still echo
	warmDiv   = 32    // -30 dB
	holdERLE  = 316.0 // 25 dB, with the residual suppressor
	holdMin   = 200   // and for at least 2 s of played sound (near speech passes)

	strictERLE = 100.0 // 20 dB: found again at another delay, held whole until the canceller takes this off

	softenFirst = 0.1 // the weight the suppressor's unaligned model keeps at the first delay found

	replayFrames = 100 // what the filter took that it learns again at the first delay found (1 s)
)

func energy(x []int16) float64 {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return e
}

// loud reports whether a frame holds sound (above about -50 dBFS).
func loud(x []int16) bool {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return e > float64(len(x))*100
}

// window is the lag, in samples, at which the filter's window starts.
func (e *Echo) window() int { return max(0, e.shift-delayMargin*e.frame) }

// restAfter is how long after the last sound played, in samples, its echo
// has died out in everything the canceller keeps: the reference's history
// (the delay search's range), the filter's tail past it, and the room's
// reverberation past that.
func (e *Echo) restAfter() int { return e.reach + e.tailSamples() + warmTail*e.frame }

func (e *Echo) tailSamples() int { return int(e.o.Tail.Seconds() * float64(e.o.Rate)) }

// Delay is the bulk delay the search found (0 until it has found one).
func (e *Echo) Delay() time.Duration { return time.Duration(e.delay.Load()) }

// Moves counts how often the filter started learning again: the delay
// search moved its window, the echo path changed under it, or speexdsp
// reset it itself.
func (e *Echo) Moves() int64 { return e.moves.Load() }

// Close implements Stage.
func (e *Echo) Close() error {
	if e.res != nil {
		e.res.close()
	}
	if e.est != nil {
		e.est.close()
	}
	e.aec.close()
	return nil
}
