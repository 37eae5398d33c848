package voice

import "strings"

// STATUS payloads documented in spec §7.
const (
	StatusPing          = "##PING"
	StatusPong          = "##INFO:PONG"
	StatusDisconnect    = "##DISCONNECT"
	StatusDisconnectAck = "##INFO:DISCONNECT 3 seconds"
	StatusListening     = "开始监听" // sent after LISTEN start in VAD mode
)

// statusWords are the known untranslated STATUS payloads (spec §7: the
// server says them in its own language, Chinese) in English words.
var statusWords = map[string]string{
	StatusListening: "listening",
}

// StatusInWords is a STATUS payload in words of the user's language, lang
// being server.params.lang: the known Chinese ones in English unless lang
// asks for Chinese; any other payload as it came.
func StatusInWords(payload, lang string) string {
	l := strings.ToLower(lang)
	if strings.HasPrefix(l, "zh") || strings.HasPrefix(l, "chinese") || strings.HasPrefix(l, "cn") {
		return payload
	}
	if w, ok := statusWords[payload]; ok {
		return w
	}
	return payload
}

// StatusKind classifies a STATUS payload.
type StatusKind int

const (
	StatusOther StatusKind = iota
	StatusKindPing
	StatusKindPong
	StatusKindDisconnect
	StatusKindDisconnectAck
	StatusKindInfo
	StatusKindError
)

var errorWords = []string{"ERROR", "FAIL", "DENIED", "INVALID", "UNAUTHORI", "FORBIDDEN", "EXPIRED", "BANNED"}

// ClassifyStatus says what a STATUS payload means. The server's error strings
// are undocumented, so a payload is an error when it contains an error word.
func ClassifyStatus(p []byte) StatusKind {
	s := string(p)
	switch {
	case s == StatusPing:
		return StatusKindPing
	case s == StatusPong:
		return StatusKindPong
	case s == StatusDisconnect:
		return StatusKindDisconnect
	case strings.HasPrefix(s, "##INFO:DISCONNECT"):
		return StatusKindDisconnectAck
	}
	up := strings.ToUpper(s)
	for _, w := range errorWords {
		if strings.Contains(up, w) {
			return StatusKindError
		}
	}
	if strings.HasPrefix(s, "##INFO:") {
		return StatusKindInfo
	}
	return StatusOther
}

// StatusFrame returns a system-task STATUS frame.
func StatusFrame(payload string) Frame {
	return Frame{Type: TypeStatus, Task: SystemTask, Payload: []byte(payload)}
}
