package conversation

import (
	"slices"

	"github.com/agenthost/agenthost/proto/voice"
)

// Say starts the owner's text turn: TEXT then END_FRAME on a new task,
// whose reply is the one that plays (and opens the follow-up window).
// answer reports whether the server answered the PING sent with it (see
// Options.Attend); it is nil without that check.
func (c *Conversation) Say(text string) (task string, answer <-chan error, err error) {
	return c.say(text, true)
}

// Notify tells the server something of the speaker's own (a timer rang)
// as a text turn, as Say does; the turn is not the owner's, so its reply
// opens no follow-up window, and while the owner's turn is under way it
// does not take the speaker.
func (c *Conversation) Notify(text string) (task string, err error) {
	task, _, err = c.say(text, false)
	return task, err
}

// RingStopped is the owner's stop of a ring (agenthost stop, the talk
// button, the wake word): what it left to play is not played, as it would
// talk over what the owner says next: the chimes queued behind the one
// under way, and the reply to the speaker's last notice, playing or yet
// to come.
func (c *Conversation) RingStopped() {
	c.mu.Lock()
	task := c.notice
	c.notice = ""
	if task != "" {
		c.hushLocked(task)
	}
	c.mu.Unlock()
	if task != "" {
		c.log.Info("the reply to the speaker's notice will not be played: the owner stopped the ring", "task", task)
		if c.play.drop(task) {
			c.replyDone(task)
		}
	}
	c.play.dropCues() // after the notice, which would play in the cues' place
}

// hushLocked marks task's reply as not to be played; c.mu held.
func (c *Conversation) hushLocked(task string) {
	c.hushed[c.hushN%len(c.hushed)] = task
	c.hushN++
}

// isHushed reports whether task's reply is not to be played.
func (c *Conversation) isHushed(task string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return task != "" && slices.Contains(c.hushed[:], task)
}

// say sends a text turn; owner: the owner's. A notice while the owner's
// turn is under way (its reply awaited or playing) does not take the
// speaker: the server is told, and its answer is not played.
func (c *Conversation) say(text string, owner bool) (task string, answer <-chan error, err error) {
	task = voice.NewTaskID()
	c.mu.Lock()
	aside := !owner && c.owned != ""
	switch {
	case owner:
		c.owned = task
	case aside:
		c.hushLocked(task)
	default:
		c.notice = task
	}
	if !aside {
		c.replyTask = task
	}
	c.mu.Unlock()
	if aside {
		c.log.Info("a notice during the owner's turn: its answer will not be played", "task", task)
	} else {
		c.play.flush(task)
		answer = c.watchTurn(task, "a turn started", true)
	}
	if err := c.out.Send(voice.Frame{Type: voice.TypeText, Task: task, Payload: []byte(text)}); err != nil {
		c.sendFailed(task, err)
		return "", nil, err
	}
	if err := c.out.Send(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 1}); err != nil {
		c.sendFailed(task, err)
		return "", nil, err
	}
	return task, answer, nil
}

// sendFailed ends the watch of a turn whose frames could not be sent; it
// is no longer the owner's turn under way (no reply will clear it).
func (c *Conversation) sendFailed(task string, err error) {
	c.mu.Lock()
	release := c.unwatchLocked(task)
	if c.owned == task {
		c.owned = ""
	}
	c.mu.Unlock()
	release()
	c.turnFailed(task, err.Error())
}
