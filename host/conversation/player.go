package conversation

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// player is the jitter buffer in front of the speaker. It plays only the
// current task, starts after a lead, pads underruns with silence and drops
// everything at once on flush.
type player struct {
	sink  audio.Sink
	frame int // samples per write
	lead  int // samples buffered before playback starts
	log   *slog.Logger
	done  func(task string)

	mu      sync.Mutex
	wake    chan struct{}
	task    string // the task allowed to play ("" = the first that arrives)
	buf     []int16
	started bool
	ended   bool
	gen     int // bumped by flush
	cues    [][]int16
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

func newPlayer(rate int, frame, lead time.Duration, log *slog.Logger, done func(string)) *player {
	if lead <= 0 {
		lead = 120 * time.Millisecond
	}
	return &player{frame: int(frame.Seconds() * float64(rate)), lead: int(lead.Seconds() * float64(rate)),
		log: log, done: done, wake: make(chan struct{}, 1)}
}

func (p *player) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// flush drops what is buffered and makes task the one that plays.
func (p *player) flush(task string) {
	p.mu.Lock()
	if len(p.buf) > 0 {
		p.log.Info("playback flushed (barge-in)", "task", p.task, "dropped_samples", len(p.buf))
	}
	p.task, p.buf, p.started, p.ended = task, p.buf[:0], false, false
	p.gen++
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
	p.buf = append(p.buf, pcm...)
	p.signal()
}

func (p *player) end(task string) {
	p.mu.Lock()
	if task == p.task {
		p.ended = true
	}
	p.mu.Unlock()
	p.signal()
}

// run writes to the sink until ctx ends.
func (p *player) run(ctx context.Context) {
	silence := make([]int16, p.frame)
	chunk := make([]int16, p.frame)
	for {
		p.mu.Lock()
		ready := len(p.buf) >= p.lead || (p.ended && len(p.buf) > 0) || (p.started && len(p.buf) > 0)
		playing := p.started && !p.ended
		var out []int16
		var finished string
		switch {
		case len(p.cues) > 0:
			out, p.cues = p.cues[0], p.cues[1:]
		case ready:
			p.started = true
			n := copy(chunk, p.buf)
			p.buf = p.buf[:copy(p.buf, p.buf[n:])]
			out = chunk[:n]
		case playing:
			out = silence // an underrun in the middle of a reply
		case p.started && p.ended:
			finished = p.task
			p.started, p.ended, p.task = false, false, ""
		}
		p.mu.Unlock()
		if finished != "" {
			p.done(finished)
			continue
		}
		if out == nil || p.sink == nil {
			select {
			case <-p.wake:
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if _, err := p.sink.Write(out); err != nil {
			p.log.Warn("the speaker failed", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}
