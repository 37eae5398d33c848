package conversation

import (
	"time"

	"github.com/agenthost/agenthost/audio/mixer"

	"github.com/agenthost/agenthost/proto/voice"
)

// turnWatch is a turn waiting on the server: the link's attention (a PING
// whose answer is due soon, and more while the server is silent) and the
// reply timer (conversation.reply_timeout without a frame of the turn).
type turnWatch struct {
	task    string
	gen     int
	release func() // the link's attention; nil until it is taken
	heard   bool   // a frame of the turn came
	timer   *time.Timer
}

func nop() {}

// watchTurn watches task from now, in place of any turn watched before (a
// new turn is a barge-in); armed starts the reply timer at once (the reply
// is awaited already), otherwise TalkStop does. It returns the answer of
// the link's first PING (nil without Options.Attend).
func (c *Conversation) watchTurn(task, why string, armed bool) <-chan error {
	c.mu.Lock()
	release := c.unwatchLocked("")
	c.watchGen++
	w := &turnWatch{task: task, gen: c.watchGen}
	c.watch = w
	if armed {
		c.armLocked()
	}
	c.mu.Unlock()
	release()
	if c.o.Attend == nil {
		return nil
	}
	// Outside c.mu: queueing the PING may wait for the link's writer.
	answer, attention := c.o.Attend(why)
	c.mu.Lock()
	current := c.watch == w
	if current {
		w.release = attention
	}
	c.mu.Unlock()
	if !current {
		attention() // the turn is over already
	}
	return answer
}

// armLocked (re)starts the watched turn's reply timer; c.mu held.
func (c *Conversation) armLocked() {
	w := c.watch
	if w.timer != nil {
		w.timer.Stop()
	}
	gen, task := w.gen, w.task
	w.timer = time.AfterFunc(c.o.ReplyTimeout, func() { c.replyTimedOut(gen, task) })
}

// unwatchLocked ends the watch of task ("" = whichever) and returns the
// release of the link's attention, to call without c.mu.
func (c *Conversation) unwatchLocked(task string) func() {
	w := c.watch
	if w == nil || (task != "" && w.task != task) {
		return nop
	}
	c.watch = nil
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.release == nil {
		return nop
	}
	return w.release
}

// heard notes a frame from the server: a frame of the watched turn gives
// its reply the full time again.
func (c *Conversation) heard(f voice.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.watch; w != nil && w.task == f.Task {
		w.heard = true
		if w.timer != nil {
			c.armLocked()
		}
	}
}

// endWatch ends the watch of task, whose reply ended; it reports whether
// task was watched.
func (c *Conversation) endWatch(task string) bool {
	c.mu.Lock()
	watched := c.watch != nil && c.watch.task == task
	release := c.unwatchLocked(task)
	c.mu.Unlock()
	release()
	return watched
}

// replyTimedOut ends a turn that got nothing for ReplyTimeout: a turn of
// which nothing came failed (the server answers PINGs, but not the turn);
// one whose END_FRAME never came is simply over.
func (c *Conversation) replyTimedOut(gen int, task string) {
	c.mu.Lock()
	w := c.watch
	if w == nil || w.gen != gen {
		c.mu.Unlock()
		return
	}
	heard := w.heard
	release := c.unwatchLocked(task)
	c.mu.Unlock()
	release()
	if heard {
		c.log.Info("the server sent nothing more for the turn; it is over", "task", task, "reply_timeout", c.o.ReplyTimeout)
	} else {
		c.turnFailed(task, "the voice server answered nothing to the turn within "+c.o.ReplyTimeout.String()+" (conversation.reply_timeout)")
	}
	if !c.play.end(task) {
		c.replyDone(task)
	}
}

// turnFailed tells the owner that a turn failed: the unreachable earcon
// and the turn_failed hook. reason is in words, with no content of the turn.
// A failed turn opens no follow-up window: nobody heard a reply to answer,
// and the room must not stream on a failure's account.
func (c *Conversation) turnFailed(task, reason string) {
	c.log.Warn("the turn failed", "task", task, "reason", reason)
	c.mu.Lock()
	if c.owned == task {
		c.owned = ""
	}
	c.mu.Unlock()
	c.play.release(task)
	c.play.cue(c.earconUnreachable, mixer.Earcon)
	c.syncActive()
	c.hook.run("turn_failed", map[string]string{"TASK": task, "REASON": reason})
}
