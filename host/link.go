package host

import "github.com/agenthost/agenthost/proto/voice"

// linkHandler is the host's face toward the link.
type linkHandler Host

func (lh *linkHandler) Up(conn int) {
	h := (*Host)(lh)
	h.calls.LinkUp(conn)
	if c := h.Conversation(); c != nil {
		c.LinkUp()
	}
	h.speaker.Device().LinkUp() // what the server was not told while away (a timer rang)
}

func (lh *linkHandler) Down(conn int, err error) {
	h := (*Host)(lh)
	h.calls.LinkDown(conn)
	if c := h.Conversation(); c != nil {
		c.LinkDown(err)
	}
}

func (lh *linkHandler) Frame(conn int, f voice.Frame) {
	h := (*Host)(lh)
	if f.Type == voice.TypeMCP {
		h.calls.Frame(conn, f)
		return
	}
	// What was said is the user's: debug only. Turn boundaries are logged
	// at info by the conversation.
	switch f.Type {
	case voice.TypeText:
		h.log.Debug("server text", "task", f.Task, "text", string(f.Payload))
	case voice.TypeEmoji:
		h.log.Debug("emoji", "task", f.Task, "payload", string(f.Payload))
	}
	if c := h.Conversation(); c != nil {
		c.Frame(f)
	}
	h.replies.frame(f)
	for _, tap := range h.taps {
		tap(f)
	}
}
