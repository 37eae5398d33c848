package host

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/proto/voice"
)

// SayAnswer is the answer of POST /v1/say: the turn's task and, when the
// request waited, its reply.
type SayAnswer struct {
	Task string `json:"task"`
	// Text is the reply's TEXT frames, one a line.
	Text string `json:"text,omitempty"`
	// Calls are the services the server called while the reply was
	// awaited, in order (a call of another turn at the same time is
	// among them).
	Calls []string `json:"calls,omitempty"`
	// Ended: the reply's END_FRAME came; false when the wait ran out.
	Ended bool `json:"ended,omitempty"`
	// Failed is the STATUS error the server answered the turn with.
	Failed string `json:"failed,omitempty"`
	// CutBy is the task whose frames came after the reply had begun and
	// before its end: the server moved on (a barge-in), and the reply
	// will not end.
	CutBy string `json:"cut_by,omitempty"`
}

// Bounds of what a wait keeps.
const (
	maxSayWait     = 10 * time.Minute
	maxEarlyFrames = 256      // frames seen before the turn's task is known
	maxReplyText   = 64 << 10 // bytes of reply text
	maxReplyCalls  = 64
)

// replies follows the replies that `agenthost say` waits for.
type replies struct {
	mu   sync.Mutex
	open map[*reply]struct{}
}

// reply is one awaited reply. Until its task is known (the turn is sent
// under the conversation's lock, and the reply may come before Say
// returns) it keeps the frames it may need.
type reply struct {
	task   string
	early  []voice.Frame
	answer SayAnswer
	text   []string
	size   int
	begun  bool          // a frame of the reply came
	done   chan struct{} // closed at the END or a STATUS error
}

func (r *replies) start() *reply {
	w := &reply{done: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = map[*reply]struct{}{}
	}
	r.open[w] = struct{}{}
	return w
}

func (r *replies) stop(w *reply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.open, w)
}

// setTask names w's task and replays the frames that came before.
func (r *replies) setTask(w *reply, task string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.task = task
	for _, f := range w.early {
		w.add(f)
	}
	w.early = nil
}

// frame sees every conversation frame from the server.
func (r *replies) frame(f voice.Frame) {
	switch {
	case f.Task == "": // a PONG, the link's news: of no turn
		return
	case f.Type != voice.TypeText && f.Type != voice.TypeEnd && f.Type != voice.TypeStatus && f.Type != voice.TypeAudio:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.open {
		if w.task == "" {
			if f.Type == voice.TypeAudio && f.Task != lastTask(w.early) {
				f.Payload = nil // only its task matters
			} else if f.Type == voice.TypeAudio {
				continue
			}
			if len(w.early) < maxEarlyFrames {
				w.early = append(w.early, f)
			}
			continue
		}
		w.add(f)
	}
}

// call sees every call from the server.
func (r *replies) call(rec calls.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.open {
		if !w.ended() && len(w.answer.Calls) < maxReplyCalls {
			w.answer.Calls = append(w.answer.Calls, rec.Method)
		}
	}
}

// lastTask is the task of the last of frames, "" for none.
func lastTask(frames []voice.Frame) string {
	if len(frames) == 0 {
		return ""
	}
	return frames[len(frames)-1].Task
}

// add takes a frame from the server; replies.mu held.
func (w *reply) add(f voice.Frame) {
	if w.ended() {
		return
	}
	if f.Task != w.task {
		if w.begun && f.Type != voice.TypeStatus {
			w.answer.CutBy = f.Task
			close(w.done)
		}
		return
	}
	w.begun = true
	switch f.Type {
	case voice.TypeText:
		if w.size+len(f.Payload) <= maxReplyText {
			w.text = append(w.text, string(f.Payload))
			w.size += len(f.Payload)
		}
	case voice.TypeEnd:
		w.answer.Ended = true
		close(w.done)
	case voice.TypeStatus:
		if voice.ClassifyStatus(f.Payload) == voice.StatusKindError {
			w.answer.Failed = string(f.Payload)
			close(w.done)
		}
	}
}

func (w *reply) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// SayAndWait starts a text turn as SayText does and, when wait is above
// zero, waits up to it (at most maxSayWait) for the reply's end: its text,
// and what the server called meanwhile. A wait that runs out is no error:
// the answer says the reply has not Ended.
func (h *Host) SayAndWait(ctx context.Context, text string, wait time.Duration) (SayAnswer, error) {
	if wait <= 0 {
		task, err := h.SayText(ctx, text)
		return SayAnswer{Task: task}, err
	}
	w := h.replies.start()
	defer h.replies.stop(w)
	task, err := h.SayText(ctx, text)
	if err != nil {
		return SayAnswer{Task: task}, err
	}
	h.replies.setTask(w, task)
	ctx, cancel := context.WithTimeout(ctx, min(wait, maxSayWait))
	defer cancel()
	select {
	case <-w.done:
	case <-ctx.Done():
	}
	h.replies.mu.Lock()
	defer h.replies.mu.Unlock()
	a := w.answer
	a.Task, a.Text = task, strings.Join(w.text, "\n")
	a.Calls = append([]string(nil), a.Calls...)
	return a, nil
}
