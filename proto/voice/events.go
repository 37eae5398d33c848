package voice

import (
	"encoding/json"
	"fmt"
)

// LISTEN states (spec §11).
const (
	ListenStart     = "start"
	ListenDetecting = "detecting"
	ListenStop      = "stop"
)

// Listen is the JSON payload of a LISTEN frame.
type Listen struct {
	TaskID string `json:"taskid"`
	Type   string `json:"type"`
	State  string `json:"state"`
	Mode   string `json:"mode,omitempty"`
}

// ListenFrame builds a LISTEN frame for task in the given state.
func ListenFrame(task, state, mode string) Frame {
	p, _ := json.Marshal(Listen{TaskID: task, Type: "listen", State: state, Mode: mode})
	return Frame{Type: TypeListen, Task: task, Payload: p}
}

// ParseListen decodes a LISTEN payload; unknown fields are ignored.
func ParseListen(p []byte) (Listen, error) {
	var l Listen
	if err := json.Unmarshal(p, &l); err != nil {
		return l, fmt.Errorf("voice: LISTEN payload is not JSON: %w", err)
	}
	if l.State == "" {
		return l, fmt.Errorf("voice: LISTEN payload has no state")
	}
	return l, nil
}

// Emoji is the JSON payload of an EMOJI frame (spec §12).
type Emoji struct {
	Emoji     string `json:"emoji"`
	PlaySound int    `json:"playSound,omitempty"`
}

// ParseEmoji decodes an EMOJI payload; unknown fields are ignored.
func ParseEmoji(p []byte) (Emoji, error) {
	var e Emoji
	if err := json.Unmarshal(p, &e); err != nil {
		return e, fmt.Errorf("voice: EMOJI payload is not JSON: %w", err)
	}
	return e, nil
}

// EmojiFrame builds an EMOJI frame; its seq is always 0000.
func EmojiFrame(task string, e Emoji) Frame {
	p, _ := json.Marshal(e)
	return Frame{Type: TypeEmoji, Task: task, Payload: p}
}
