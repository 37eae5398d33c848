package conversation

import (
	"log/slog"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/mixer"
)

func testPlayer() (*player, []int16, []int16) {
	p := newPlayer(nil, 16000, 60*time.Millisecond, 120*time.Millisecond, slog.New(slog.DiscardHandler), func(string) {})
	return p, make([]int16, p.frame), make([]int16, p.frame)
}

func frameOf(v int16) []int16 {
	f := make([]int16, 960)
	for i := range f {
		f[i] = v
	}
	return f
}

func TestPlayerWaitsForTheLeadThenPadsUnderruns(t *testing.T) {
	p, chunk, silence := testPlayer()
	p.push("t1", frameOf(1))
	if k, _, _ := p.next(chunk, silence); k != idle {
		t.Fatalf("played with 60 ms buffered and a 120 ms lead: kind %d", k)
	}
	p.push("t1", frameOf(2))
	for _, want := range []int16{1, 2} {
		if k, out, _ := p.next(chunk, silence); k != play || out[0] != want || len(out) != 960 {
			t.Fatalf("kind %d first sample %d, want frame %d", k, out[0], want)
		}
	}
	if k, out, _ := p.next(chunk, silence); k != pad || out[0] != 0 {
		t.Fatalf("an underrun mid-reply gave kind %d", k)
	}
	p.push("t1", frameOf(3)) // once started, one frame is enough
	if k, out, _ := p.next(chunk, silence); k != play || out[0] != 3 {
		t.Fatalf("kind %d", k)
	}
	p.end("t1")
	if k, _, task := p.next(chunk, silence); k != finished || task != "t1" {
		t.Fatalf("kind %d task %q", k, task)
	}
	if k, _, _ := p.next(chunk, silence); k != idle {
		t.Fatalf("kind %d after the end", k)
	}
}

func TestPlayerFlushDropsTheOldTask(t *testing.T) {
	p, chunk, silence := testPlayer()
	p.flush("a")
	for range 10 {
		p.push("a", frameOf(1))
	}
	p.next(chunk, silence)
	p.flush("b")
	p.push("a", frameOf(1)) // late frame of the interrupted turn
	p.push("b", frameOf(7))
	p.push("b", frameOf(7))
	if k, out, _ := p.next(chunk, silence); k != play || out[0] != 7 {
		t.Fatalf("after the flush: kind %d sample %d, want the new task's audio", k, out[0])
	}
}

func TestPlayerShortReplyPlaysBelowTheLead(t *testing.T) {
	p, chunk, silence := testPlayer()
	p.push("t1", frameOf(5)[:100])
	p.end("t1")
	if k, out, _ := p.next(chunk, silence); k != play || len(out) != 100 {
		t.Fatalf("kind %d len %d", k, len(out))
	}
}

func TestPlayerBoundsTheBufferAndCuesGoFirst(t *testing.T) {
	p, chunk, silence := testPlayer()
	p.max = 3 * 960
	for range 5 {
		p.push("t1", frameOf(1))
	}
	if n := len(p.buf) - p.off; n != 3*960 {
		t.Fatalf("buffered %d samples past a %d bound", n, p.max)
	}
	p.cue(frameOf(9)[:10], mixer.Earcon)
	if k, out, _ := p.next(chunk, silence); k != play || out[0] != 9 {
		t.Fatal("the earcon did not come first")
	}
}

// TestPlayerAfterABargeInWithoutAnAnswer: a turn that interrupted playback
// but got no audio back (a text-only answer, or none before its turn
// failed) must not keep every later reply on another task out for good.
func TestPlayerAfterABargeInWithoutAnAnswer(t *testing.T) {
	for _, how := range []string{"end", "release"} {
		t.Run(how, func(t *testing.T) {
			p, chunk, silence := testPlayer()
			p.push("a", frameOf(1))
			p.flush("b") // the barge-in turn
			if how == "end" {
				if p.end("b") {
					t.Fatal("a reply without audio is said to be playing")
				}
			} else {
				p.release("b") // its turn failed without an END
			}
			p.push("c", frameOf(9)) // a later reply, e.g. started by the server
			p.push("c", frameOf(9))
			if k, out, _ := p.next(chunk, silence); k != play || out[0] != 9 {
				t.Fatalf("kind %d: the later reply on task c is dropped as stale", k)
			}
		})
	}
}

// TestAReplyCutShortAtItsStartLeavesNoStreamOpen: run's steps in the order
// a link drop, a dropped reply or a barge-in can interleave them: next
// hands out the reply's first chunk, the reply is cut short, then run,
// which holds no stream yet, opens one for that chunk. No stream may be
// left open for a reply that is over (it would never be closed: busy()
// stays true and the media stays ducked).
func TestAReplyCutShortAtItsStartLeavesNoStreamOpen(t *testing.T) {
	for _, c := range []struct {
		name string
		cut  func(p *player)
	}{
		{"link down", func(p *player) { p.flush("") }},
		{"dropped", func(p *player) { p.drop("t1") }},
		{"barge-in", func(p *player) { p.flush("t2") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := mixer.New(mixer.NewSlot(16000), mixer.Options{Rate: 16000})
			p := newPlayer(m, 16000, 60*time.Millisecond, 120*time.Millisecond, slog.New(slog.DiscardHandler), func(string) {})
			chunk, silence := make([]int16, p.frame), make([]int16, p.frame)
			p.push("t1", frameOf(1))
			p.push("t1", frameOf(2))
			if k, _, _ := p.next(chunk, silence); k != play {
				t.Fatalf("kind %d, want the first chunk", k)
			}
			c.cut(p)
			p.open() // run: no stream yet, so it opens one for the chunk
			if k, _, _ := p.next(chunk, silence); k != idle {
				t.Fatalf("kind %d after the reply was cut short, want idle", k)
			}
			if p.busy() || len(m.Status()) != 0 {
				t.Fatalf("nothing to play, yet busy() %v (the media stays ducked) and the mixer holds %+v", p.busy(), m.Status())
			}
		})
	}
}
