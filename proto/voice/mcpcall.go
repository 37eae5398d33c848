package voice

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A call is read here on the way of every call, in the one shape the voice
// server sends it, without encoding/json's allocations (its decode state,
// its scanner's stack, the envelope's copies: 18 allocations for a call's
// 4). Whatever is not in that shape is left to encoding/json, so that each
// payload reads exactly as it did.

// quickCall reads p if it is a valid JSON call whose keys are the exact
// names of the envelope's and the Call's fields, each once, with a
// non-empty call_id and method written without escapes; ok=false leaves p
// to parseMCPJSON (which reads these the same way).
func quickCall(p []byte) (c *Call, ok bool) {
	if !json.Valid(p) {
		return nil, false
	}
	i := space(p, 0)
	if p[i] != '{' {
		return nil, false
	}
	var top [2][]byte // type, data
	if _, ok := members(p, i, []string{"type", "data"}, top[:]); !ok {
		return nil, false
	}
	if !bytes.Equal(top[0], []byte(`"`+MCPCall+`"`)) || len(top[1]) == 0 || top[1][0] != '{' {
		return nil, false
	}
	var f [3][]byte // call_id, method, params
	if _, ok := members(top[1], 0, []string{"call_id", "method", "params"}, f[:]); !ok {
		return nil, false
	}
	id, ok1 := plainString(f[0])
	method, ok2 := plainString(f[1])
	if !ok1 || !ok2 || len(id) == 0 || len(method) == 0 {
		return nil, false
	}
	c = &Call{CallID: string(id), Method: string(method)}
	if f[2] != nil {
		c.Params = append(json.RawMessage(nil), f[2]...)
	}
	return c, true
}

// plainString returns the content of a JSON string value that has no
// escapes and is valid UTF-8 (encoding/json keeps it byte for byte).
func plainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	s := v[1 : len(v)-1]
	return s, bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s)
}

// members walks the object at p[i] (p is valid JSON) and sets vals[k] to
// the raw value of keys[k]. ok=false when a key is not one of keys, comes
// twice or has an escape. It returns the offset after the object.
func members(p []byte, i int, keys []string, vals [][]byte) (int, bool) {
	i = space(p, i+1) // past '{'
	if p[i] == '}' {
		return i + 1, true
	}
	for {
		end := bytes.IndexByte(p[i+1:], '"') + i + 1 // p[i] == '"'
		key := p[i+1 : end]
		k := 0
		for k < len(keys) && string(key) != keys[k] {
			k++
		}
		if k == len(keys) || vals[k] != nil || bytes.IndexByte(key, '\\') >= 0 {
			return 0, false
		}
		i = space(p, space(p, end+1)+1) // past ':'
		start := i
		i = skipValue(p, i)
		vals[k] = p[start:i]
		i = space(p, i)
		if p[i] == '}' {
			return i + 1, true
		}
		i = space(p, i+1) // past ','
	}
}

// skipValue returns the offset after the value at p[i] (p is valid JSON).
func skipValue(p []byte, i int) int {
	depth := 0
	for ; i < len(p); i++ {
		switch p[i] {
		case '"':
			for i++; p[i] != '"'; i++ {
				if p[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of the object or array around a literal
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// space returns the offset of the first byte at or after i that is not
// JSON white space.
func space(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	return i
}
