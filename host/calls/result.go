package calls

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agenthost/agenthost/proto/voice"
)

// A call's result is encoded here on the way of every call, as
// voice.MarshalMCP encodes it, byte for byte, but without reflection and
// with one pass over the data, which MarshalMCP compacted twice (once in
// the result, once in the envelope): in the profile of a plugin call it was
// the host's largest own cost after the dispatch.

// resultHead starts every result payload, up to the call_id's value.
const resultHead = `{"type":"` + voice.MCPResult + `","data":{"call_id":`

// resultPayload is voice.MarshalMCP(voice.MCPResult, voice.Result{CallID:
// id, Result: out}).
func resultPayload(id string, out voice.Outcome) ([]byte, error) {
	b := make([]byte, 0, len(resultHead)+48+len(id)+len(out.Data)+len(out.Error))
	b = append(b, resultHead...)
	b = appendString(b, id)
	b = append(b, `,"result":{"success":`...)
	b = strconv.AppendBool(b, out.Success)
	if len(out.Data) > 0 {
		b = append(b, `,"data":`...)
		var err error
		if b, err = appendCompact(b, out.Data); err != nil { // not JSON: MarshalMCP's error
			return voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: id, Result: out})
		}
	}
	if out.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, out.Error)
	}
	b = append(b, "}}}"...)
	return voice.EscapeJSONMarkers(b), nil
}

// appendCompact appends data compacted, with <, >, & and U+2028/U+2029
// escaped in its strings, as encoding/json writes a json.RawMessage.
func appendCompact(b []byte, data []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, data); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if !bytes.ContainsAny(out[len(b):], "<>&\u2028\u2029") {
		return out, nil
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, out[len(b):])
	return append(out[:len(b)], esc.Bytes()...), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included; invalid UTF-8 as U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
