package conversation

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
)

// maxBuffered bounds the reply audio held ahead of the speaker.
const maxBuffered = 60 * time.Second

// player is the jitter buffer in front of the speaker's mixer. It plays
// only the current task, each reply as a Voice stream of its own, starts
// after a lead, pads underruns with silence and drops everything at once on
// flush; the earcons it is given play first, each as an Earcon stream.
type player struct {
	out   *mixer.Mixer
	rate  int
	frame int // samples per write
	lead  int // samples buffered before playback starts
	max   int // samples the buffer may hold
	log   *slog.Logger
	done  func(task string)

	mu       sync.Mutex
	speaker  bool          // a speaker is open: without one, replies are dropped at once
	st       *mixer.Stream // the reply playing
	last     *mixer.Stream // a reply playing out (its Close under way)
	isCue    bool          // next returned a cue, of cueClass
	cueClass mixer.Class
	wake     chan struct{}
	task     string // the task allowed to play ("" = the first that arrives)
	buf      []int16
	off      int // buf[off:] is still to play
	started  bool
	ended    bool
	cues     []cue
	overflow bool // warned about a full buffer for this reply
	cut      int  // replies cut short (flush, drop)
	handed   int  // cut when next handed out the last chunk of a reply

	underruns, bargeIns int64 // counted for metrics
}

func newPlayer(out *mixer.Mixer, rate int, frame, lead time.Duration, log *slog.Logger, done func(string)) *player {
	if lead <= 0 {
		lead = 120 * time.Millisecond
	}
	return &player{out: out, rate: rate, frame: int(frame.Seconds() * float64(rate)), lead: int(lead.Seconds() * float64(rate)),
		max: int(maxBuffered.Seconds() * float64(rate)), log: log, done: done, wake: make(chan struct{}, 1)}
}

// setSpeaker says whether a speaker is open.
func (p *player) setSpeaker(on bool) {
	p.mu.Lock()
	p.speaker = on
	p.mu.Unlock()
	p.signal()
}

func (p *player) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// cue is a sound that plays ahead of any reply: an earcon, or a ring's
// chime.
type cue struct {
	pcm   []int16
	class mixer.Class
}

// cue plays pcm (of class: Earcon or Ring) at the next write, ahead of any
// reply audio.
func (p *player) cue(pcm []int16, class mixer.Class) {
	if len(pcm) == 0 {
		return
	}
	p.mu.Lock()
	if len(p.cues) < maxCues {
		p.cues = append(p.cues, cue{pcm, class})
	}
	p.mu.Unlock()
	p.signal()
}

// maxCues bounds the earcons waiting to play.
const maxCues = 16

// stopLocked takes the reply's streams off the mixer at once; p.mu held.
// It returns them, to Stop outside the lock.
func (p *player) stopLocked() []*mixer.Stream {
	var ss []*mixer.Stream
	for _, s := range []*mixer.Stream{p.st, p.last} {
		if s != nil {
			ss = append(ss, s)
		}
	}
	p.st, p.last = nil, nil
	return ss
}

func stopAll(ss []*mixer.Stream) {
	for _, s := range ss {
		s.Stop()
	}
}

// flush drops what is buffered and makes task the one that plays: a new
// turn's task cuts the reply short (a barge-in); "" ends it because the
// link went down or the host stops.
func (p *player) flush(task string) {
	p.mu.Lock()
	if n := len(p.buf) - p.off; n > 0 {
		if task != "" {
			p.bargeIns++
			p.log.Info("playback flushed (barge-in)", "task", p.task, "dropped_samples", n)
		} else {
			p.log.Info("playback stopped: the link went down", "task", p.task, "dropped_samples", n)
		}
	}
	p.task, p.buf, p.off, p.started, p.ended, p.overflow = task, p.buf[:0], 0, false, false, false
	p.cut++
	stop := p.stopLocked()
	p.mu.Unlock()
	stopAll(stop)
	p.signal()
}

func (p *player) push(task string, pcm []int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.task == "" {
		p.task = task
	}
	if task != p.task {
		return // a stale task: its turn was interrupted
	}
	if len(p.buf)-p.off+len(pcm) > p.max {
		if !p.overflow {
			p.log.Warn("reply audio arrives faster than it plays; dropping the excess", "task", task, "buffered", maxBuffered)
			p.overflow = true
		}
		return
	}
	if p.off > 0 && p.off >= len(p.buf)/2 {
		p.buf = p.buf[:copy(p.buf, p.buf[p.off:])]
		p.off = 0
	}
	p.buf = append(p.buf, pcm...)
	p.signal()
}

// end marks the reply of task as complete. It reports whether that reply
// still has audio to play out, in which case done is called when it has; a
// reply that never brought audio (a text-only answer) is over at once.
func (p *player) end(task string) (playing bool) {
	p.mu.Lock()
	playing = task == p.task && (p.started || len(p.buf) > p.off)
	if playing {
		p.ended = true
	} else if task == p.task {
		p.task = ""
	}
	p.mu.Unlock()
	p.signal()
	return playing
}

// What next decided.
const (
	idle     = iota // nothing to play: wait
	play            // write out
	pad             // write out, which is silence: the reply is late
	finished        // the reply of task has played out
)

// next decides the next write: a cue (isCue is set), a chunk of the reply,
// silence during an underrun, nothing, or the end of a reply. chunk and silence are
// frame-sized buffers it may return.
func (p *player) next(chunk, silence []int16) (kind int, out []int16, task string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	queued := len(p.buf) - p.off
	p.isCue = false
	switch {
	case len(p.cues) > 0:
		p.cueClass, out, p.cues = p.cues[0].class, p.cues[0].pcm, p.cues[1:]
		p.isCue = true
		return play, out, ""
	case queued >= p.lead || (queued > 0 && (p.started || p.ended)):
		p.started, p.handed = true, p.cut
		n := copy(chunk, p.buf[p.off:])
		p.off += n
		return play, chunk[:n], ""
	case p.started && !p.ended:
		p.underruns++
		return pad, silence, ""
	case p.started && p.ended:
		task = p.task
		p.started, p.ended, p.task = false, false, ""
		return finished, nil, task
	}
	return idle, nil, ""
}

// run writes the cues and the replies to the mixer until ctx ends: a cue
// plays out before the reply goes on.
func (p *player) run(ctx context.Context) {
	silence := make([]int16, p.frame)
	chunk := make([]int16, p.frame)
	for ctx.Err() == nil {
		kind, out, task := p.next(chunk, silence)
		p.mu.Lock()
		speaker, isCue, class := p.speaker, p.isCue, p.cueClass
		st := p.st
		if kind == finished {
			p.st, p.last = nil, st
		}
		p.mu.Unlock()
		switch {
		case kind == finished:
			if st != nil {
				st.Close() // returns once it has played out (or was stopped)
			}
			p.mu.Lock()
			if p.last == st {
				p.last = nil
			}
			p.mu.Unlock()
			p.done(task)
			continue
		case kind == play && !speaker:
			continue // no speaker: drop it at once
		case kind == idle || !speaker:
			select { // every change of the buffer signals wake
			case <-p.wake:
			case <-ctx.Done():
			}
			continue
		}
		if isCue {
			p.playCue(ctx, out, class)
			continue
		}
		if st == nil {
			var err error
			if st, err = p.open(); errors.Is(err, errCutShort) {
				continue // the chunk's reply is over: it goes
			} else if err != nil {
				p.log.Warn("the reply cannot play", "err", err)
				p.pause(ctx)
				continue
			}
		}
		if _, err := st.Write(out); err != nil {
			p.mu.Lock()
			current := p.st == st
			p.mu.Unlock()
			if current && !errors.Is(err, mixer.ErrClosed) {
				p.log.Warn("the speaker failed", "err", err)
			}
			if current {
				p.pause(ctx)
			}
		}
	}
	p.mu.Lock()
	stop := p.stopLocked()
	p.mu.Unlock()
	stopAll(stop)
}

// errCutShort: the reply of the chunk to play was cut short since next
// handed it out.
var errCutShort = errors.New("the reply was cut short")

// open opens the current reply's stream on the mixer, unless the reply of
// the chunk next handed out last has been cut short since.
func (p *player) open() (*mixer.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handed != p.cut {
		return nil, errCutShort
	}
	if p.st != nil {
		return p.st, nil
	}
	st, err := p.out.Open("reply "+p.task, mixer.Voice, audio.Format{Rate: p.rate, Channels: 1})
	if err != nil {
		return nil, err
	}
	p.st = st
	return st, nil
}

func (p *player) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
}

// playCue plays an earcon as a stream of its own, and returns once it has
// played out.
func (p *player) playCue(ctx context.Context, pcm []int16, class mixer.Class) {
	st, err := p.out.Open(class.String(), class, audio.Format{Rate: p.rate, Channels: 1})
	if err != nil {
		p.log.Warn("an earcon cannot play", "err", err)
		return
	}
	stop := context.AfterFunc(ctx, st.Stop)
	defer stop()
	if _, err := st.Write(pcm); err == nil {
		st.Close()
	}
}

// busy reports whether a reply is under way (buffered, playing or playing out).
func (p *player) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st != nil || p.last != nil || p.started || len(p.buf) > p.off
}

// dropCues drops the cues queued (not the one under way).
func (p *player) dropCues() {
	p.mu.Lock()
	p.cues = nil
	p.mu.Unlock()
}

// drop ends task's reply unplayed (what is buffered goes, and the speaker
// is free for the next reply); it reports whether task's was the reply to
// play.
func (p *player) drop(task string) bool {
	p.mu.Lock()
	mine := task == p.task
	var stop []*mixer.Stream
	if mine {
		p.task, p.buf, p.off, p.started, p.ended, p.overflow = "", p.buf[:0], 0, false, false, false
		p.cut++
		stop = p.stopLocked()
	}
	p.mu.Unlock()
	stopAll(stop)
	p.signal()
	return mine
}

// release gives up task's claim on the speaker when it has nothing to
// play (its turn failed or ended without audio), so that the next reply,
// on whatever task, plays.
func (p *player) release(task string) {
	p.mu.Lock()
	if task == p.task && !p.started && len(p.buf) == p.off {
		p.task = ""
	}
	p.mu.Unlock()
}
