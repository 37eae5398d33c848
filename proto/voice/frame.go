// Package voice owns the voice server's TCP wire protocol: frames
// (##START, type, task, seq, payload, ##END), a streaming decoder with a size
// bound, the encoder, and the typed payloads (AUTH, STATUS, LISTEN, EMOJI, MCP).
// It does no I/O beyond io.Reader and io.Writer.
package voice

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Type is the one-byte message type of a frame.
type Type byte

// The message types of spec §4. Other values decode as frames of an unknown type.
const (
	TypeAuth   Type = 0x01
	TypeAudio  Type = 0x02
	TypeEnd    Type = 0x03
	TypeText   Type = 0x04
	TypeStatus Type = 0x05
	TypeMCP    Type = 0x06
	TypeSpeak  Type = 0x07
	TypeListen Type = 0x08
	TypeEmoji  Type = 0x09
)

var typeNames = [...]string{"", "AUTH", "AUDIO", "END", "TEXT", "STATUS", "MCP", "SPEAK", "LISTEN", "EMOJI"}

func (t Type) String() string {
	if int(t) > 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("TYPE(0x%02x)", byte(t))
}

// Known reports whether t is one of the documented types.
func (t Type) Known() bool { return t >= TypeAuth && t <= TypeEmoji }

// Wire constants.
const (
	StartMarker = "##START"
	EndMarker   = "##END"
	// SystemTask carries AUTH, PING/PONG and DISCONNECT.
	SystemTask = "00000000"
	// MCPTask is the task id the MCP documentation uses for every MCP message.
	MCPTask = "mcp00001"
	// TaskLen is the fixed width of a task id on the wire.
	TaskLen = 8
	// SeqModulo is where sequence numbers wrap (4 decimal digits).
	SeqModulo = 10000
	// DefaultMaxFrame bounds a frame's size unless the decoder is told otherwise.
	DefaultMaxFrame = 1 << 20

	headerLen          = len(StartMarker) + 1 + TaskLen + 4
	bracketedHeaderLen = headerLen + 2
)

// Frame is one protocol message. Task is the task id without its space padding.
type Frame struct {
	Type    Type
	Task    string
	Seq     int
	Payload []byte
}

// String renders the frame for a human log line. AUTH tokens are masked and
// binary payloads are summarised by size.
func (f Frame) String() string {
	head := fmt.Sprintf("%s %s/%04d", f.Type, f.Task, f.Seq)
	switch f.Type {
	case TypeAudio:
		return fmt.Sprintf("%s %d bytes", head, len(f.Payload))
	case TypeAuth:
		a, err := ParseAuth(f.Payload)
		if err != nil {
			return head + " (unreadable auth)"
		}
		return head + " " + a.String()
	case TypeEnd:
		if len(f.Payload) == 0 {
			return head
		}
	}
	if !utf8.Valid(f.Payload) {
		return fmt.Sprintf("%s %d bytes (not UTF-8)", head, len(f.Payload))
	}
	const max = 300
	s := string(f.Payload)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return head + " " + strconv.Quote(s)
}

// NewTaskID returns a fresh random task id of TaskLen hex characters.
func NewTaskID() string {
	var b [TaskLen / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
