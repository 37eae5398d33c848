package conversation

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// maxBuffered bounds the reply audio held ahead of the speaker.
const maxBuffered = 60 * time.Second

// player is the jitter buffer in front of the speaker. It plays only the
// current task, starts after a lead, pads underruns with silence and drops
// everything at once on flush.
type player struct {
	sink  audio.Sink
	frame int // samples per write
	lead  int // samples buffered before playback starts
	max   int // samples the buffer may hold
	log   *slog.Logger
	done  func(task string)

	mu       sync.Mutex
	wake     chan struct{}
	task     string // the task allowed to play ("" = the first that arrives)
	buf      []int16
	off      int // buf[off:] is still to play
	started  bool
	ended    bool
	cues     [][]int16
	overflow bool // warned about a full buffer for this reply

	underruns, bargeIns int64 // counted for metrics
}

func newPlayer(rate int, frame, lead time.Duration, log *slog.Logger, done func(string)) *player {
	if lead <= 0 {
		lead = 120 * time.Millisecond
	}
	return &player{frame: int(frame.Seconds() * float64(rate)), lead: int(lead.Seconds() * float64(rate)),
		max: int(maxBuffered.Seconds() * float64(rate)), log: log, done: done, wake: make(chan struct{}, 1)}
}

func (p *player) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// cue plays pcm (an earcon) at the next write, ahead of any reply audio.
func (p *player) cue(pcm []int16) {
	if len(pcm) == 0 {
		return
	}
	p.mu.Lock()
	p.cues = append(p.cues, pcm)
	p.mu.Unlock()
	p.signal()
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
	p.mu.Unlock()
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

// next decides the next write: a cue, a chunk of the reply, silence during
// an underrun, nothing, or the end of a reply. chunk and silence are
// frame-sized buffers it may return.
func (p *player) next(chunk, silence []int16) (kind int, out []int16, task string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	queued := len(p.buf) - p.off
	switch {
	case len(p.cues) > 0:
		out, p.cues = p.cues[0], p.cues[1:]
		return play, out, ""
	case queued >= p.lead || (queued > 0 && (p.started || p.ended)):
		p.started = true
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

// run writes to the sink until ctx ends.
func (p *player) run(ctx context.Context) {
	silence := make([]int16, p.frame)
	chunk := make([]int16, p.frame)
	for ctx.Err() == nil {
		kind, out, task := p.next(chunk, silence)
		switch {
		case kind == finished:
			p.done(task)
			continue
		case kind == play && p.sink == nil:
			continue // no speaker: drop it at once
		case kind == idle || p.sink == nil:
			select { // every change of the buffer signals wake
			case <-p.wake:
			case <-ctx.Done():
			}
			continue
		}
		if _, err := p.sink.Write(out); err != nil {
			p.log.Warn("the speaker failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
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
	if mine {
		p.task, p.buf, p.off, p.started, p.ended, p.overflow = "", p.buf[:0], 0, false, false, false
	}
	p.mu.Unlock()
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
