package echoroom

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// Script is the near-end speech a Live room plays into its microphone.
type Script struct {
	// Speech is said at SpeechAt after the room opens, then every
	// SpeechEvery (0: once); nil is none.
	Speech      []int16
	SpeechAt    time.Duration
	SpeechEvery time.Duration
	// Interrupt is said InterruptAfter into every reply (sound from the
	// speaker after at least replyGap of silence) that is still playing
	// then, as a person who talks over the speaker; nil is none.
	Interrupt      []int16
	InterruptAfter time.Duration
}

// Buffer is the speaker's buffer in a Live room: a write blocks while more
// than this is queued, and Latency reports it, as a device does (ALSA's
// default latency through PortAudio is of this order).
const Buffer = 200 * time.Millisecond

// replyGap is the silence after which sound from the speaker is a new
// reply (for Script.Interrupt).
const replyGap = 300 * time.Millisecond

// lead is how far ahead of now a speaker that had run dry starts playing.
const lead = 20 * time.Millisecond

// Live is the room in real time: Sink is its speaker, Source its
// microphone. Both take real time from the wall clock (neither needs
// pacing), and either may be used without the other.
type Live struct {
	r      Room
	h      []float64
	d      int
	script Script
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	spk     []float64 // the speaker's output (after clipping), a ring by position
	spkHi   int64     // one past the last position written
	spkLast int64     // the last position with sound
	mic     int64     // the next position the microphone delivers
	near    []nearClip
	rng     *rand.Rand
	nextSay int64
}

type nearClip struct {
	at  int64
	pcm []int16
	// whilePlaying: said only if the speaker still plays when it is due
	// (an interruption of a reply that is already over is not said).
	whilePlaying bool
}

// maxLag is how far the microphone's reader may fall behind before the
// room skips ahead (as a device that overflows).
const maxLag = 2 * time.Second

// NewLive opens a room that runs until Close.
func NewLive(r Room, s Script) (*Live, error) {
	r = r.withDefaults()
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if s.SpeechEvery < 0 || s.SpeechAt < 0 || s.InterruptAfter < 0 {
		return nil, errors.New("echo room: the script's times must not be negative")
	}
	l := &Live{r: r, h: r.Response(), d: int(r.Delay.Seconds() * float64(r.Rate)), script: s, start: time.Now(),
		rng: rand.New(rand.NewPCG(r.Seed, 0x6c697665)), spkLast: math.MinInt64 / 2}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	size := 1
	for size < int((MaxDelay+MaxReverb+2*maxLag+time.Second).Seconds()*float64(r.Rate)) {
		size <<= 1
	}
	l.spk = make([]float64, size)
	l.nextSay = -1
	if s.Speech != nil {
		l.nextSay = l.samples(s.SpeechAt)
	}
	return l, nil
}

func (l *Live) samples(d time.Duration) int64 { return int64(d.Seconds() * float64(l.r.Rate)) }

// now is the room's clock, in samples.
func (l *Live) now() int64 { return l.samples(time.Since(l.start)) }

func (l *Live) slot(p int64) int { return int(p & int64(len(l.spk)-1)) }

// Close stops the room: pending reads and writes return audio.ErrClosed.
func (l *Live) Close() error {
	l.cancel()
	return nil
}

// Say mixes pcm into the microphone from now on.
func (l *Live) Say(pcm []int16) {
	l.mu.Lock()
	l.near = append(l.near, nearClip{at: max(l.mic, l.now()), pcm: pcm})
	l.mu.Unlock()
}

// sleep waits d or until the room or device (closed) closes.
func (l *Live) sleep(d time.Duration, closed <-chan struct{}) error {
	if d <= 0 {
		return l.ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-l.ctx.Done():
		return audio.ErrClosed
	case <-closed:
		return audio.ErrClosed
	}
}

// Source is the room's microphone.
func (l *Live) Source() audio.Source { return &mic{l: l, done: make(chan struct{})} }

// Sink is the room's speaker.
func (l *Live) Sink() audio.Sink { return &speaker{l: l} }

type mic struct {
	l      *Live
	closed atomic.Bool
	done   chan struct{} // closed by Close: a pending Read returns
	once   sync.Once
}

func (m *mic) Read(p []int16) (int, error) {
	l := m.l
	if l.ctx.Err() != nil || m.closed.Load() {
		return 0, audio.ErrClosed
	}
	l.mu.Lock()
	if lag := l.now() - l.mic; lag > l.samples(maxLag) {
		l.mic += lag - int64(len(p)) // overflow: skip ahead
	}
	due := l.mic + int64(len(p))
	l.mu.Unlock()
	if err := l.sleep(time.Duration(due-l.now())*time.Second/time.Duration(l.r.Rate), m.done); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.render(p)
	return len(p), nil
}

// render fills p with the microphone from l.mic on; l.mu held.
func (l *Live) render(p []int16) {
	na := l.r.noiseAmp()
	for i := range p {
		q := l.mic + int64(i)
		var e float64
		if src := q - int64(l.d); src <= l.spkLast+int64(len(l.h)) { // else the speaker was silent
			e = l.convolve(src)
		}
		if na > 0 {
			e += na * l.rng.NormFloat64()
		}
		p[i] = toS16(e + l.nearAt(q))
	}
	l.mic += int64(len(p))
	l.scriptSpeech()
}

// convolve is the echo at speaker position src: the response over the
// speaker's output up to src, in at most two contiguous runs of the ring.
// Its reads (l.mu held) are left out of the race detector, which would
// multiply the room's cost several times over: most of the CPU of a test
// that runs the room in virtual time under -race.
//
//go:norace
func (l *Live) convolve(src int64) float64 {
	hi := min(src, l.spkHi-1)
	lo := max(src-int64(len(l.h))+1, l.spkHi-int64(len(l.spk)))
	var e float64
	for p := hi; p >= lo; {
		i := l.slot(p)
		n := min(int64(i)+1, p-lo+1) // samples down to the ring's start or lo
		seg := l.spk[i+1-int(n) : i+1]
		h := l.h[src-p : src-p+n]
		for j, hk := range h {
			e += hk * seg[len(seg)-1-j]
		}
		p -= n
	}
	return e
}

// nearAt is the near speech at position q, dropping clips that are over.
func (l *Live) nearAt(q int64) float64 {
	var v float64
	keep := l.near[:0]
	for _, c := range l.near {
		if q >= c.at+int64(len(c.pcm)) {
			continue
		}
		if c.whilePlaying && q == c.at && l.spkLast+int64(l.d) < q-l.samples(lead) {
			continue // the reply ended before the interruption was due
		}
		keep = append(keep, c)
		if q >= c.at {
			v += float64(c.pcm[q-c.at]) / 32768
		}
	}
	l.near = keep
	return v
}

// scriptSpeech queues the scripted speech when it is due; l.mu held.
func (l *Live) scriptSpeech() {
	if l.nextSay < 0 || l.mic < l.nextSay {
		return
	}
	l.near = append(l.near, nearClip{at: l.nextSay, pcm: l.script.Speech})
	if l.script.SpeechEvery > 0 {
		l.nextSay += l.samples(l.script.SpeechEvery)
	} else {
		l.nextSay = -1
	}
}

type speaker struct {
	l      *Live
	closed atomic.Bool
}

func (s *speaker) Write(p []int16) (int, error) {
	l := s.l
	if l.ctx.Err() != nil || s.closed.Load() {
		return 0, audio.ErrClosed
	}
	l.mu.Lock()
	now := l.now()
	if l.spkHi < now { // the speaker ran dry: a new run starts shortly
		start := now + l.samples(lead)
		for q := max(l.spkHi, start-int64(len(l.spk))); q < start; q++ {
			l.spk[l.slot(q)] = 0
		}
		l.spkHi = start
	}
	for _, v := range p {
		x := l.r.speaker(float64(v) / 32768)
		l.spk[l.slot(l.spkHi)] = x
		if x != 0 {
			if l.spkHi-l.spkLast > l.samples(replyGap) && l.script.Interrupt != nil {
				// A reply starts: the person will talk over it.
				l.near = append(l.near, nearClip{at: l.spkHi + int64(l.d) + l.samples(l.script.InterruptAfter), pcm: l.script.Interrupt, whilePlaying: true})
			}
			l.spkLast = l.spkHi
		}
		l.spkHi++
	}
	wait := l.spkHi - now - l.samples(Buffer)
	l.mu.Unlock()
	if wait > 0 {
		if err := l.sleep(time.Duration(wait)*time.Second/time.Duration(l.r.Rate), nil); err != nil {
			return len(p), nil // written; the next call reports the close
		}
	}
	return len(p), nil
}

// Latency is the speaker's full buffer.
func (s *speaker) Latency() time.Duration { return Buffer }

// Close ends the speaker (not the room: the room holds no resources
// beyond memory, and the microphone goes on).
func (s *speaker) Close() error {
	s.closed.Store(true)
	return nil
}

// Close ends the microphone; a pending Read returns at once (a reader
// that holds a lock over its Read, as a capture chain does, frees it
// without waiting for the room's clock, which in virtual time would not
// move while Close waits for that lock).
func (m *mic) Close() error {
	m.closed.Store(true)
	m.once.Do(func() { close(m.done) })
	return nil
}
