package voice

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MCP message types (spec §13).
const (
	MCPRegister = "register"
	MCPCall     = "call"
	MCPResult   = "result"
)

// MCPMessage is the envelope of every MCP payload.
type MCPMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// ServiceDef is one entry of a register message. Parameters is a JSON Schema
// kept as raw JSON.
type ServiceDef struct {
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Register announces the whole set of services, keyed by name.
type Register struct {
	Services map[string]ServiceDef `json:"services"`
}

// Call is the server asking the client to run a service.
type Call struct {
	CallID string          `json:"call_id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Outcome is the `result` object of a result message.
type Outcome struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Result answers a call with the same call_id.
type Result struct {
	CallID string  `json:"call_id"`
	Result Outcome `json:"result"`
}

// ParseMCP decodes an MCP payload into *Register, *Call or *Result. An
// unknown message type returns the envelope and an error naming the type.
func ParseMCP(p []byte) (any, error) {
	if c, ok := quickCall(p); ok {
		return c, nil
	}
	return parseMCPJSON(p)
}

// parseMCPJSON is ParseMCP by encoding/json, for every payload.
func parseMCPJSON(p []byte) (any, error) {
	var m MCPMessage
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, fmt.Errorf("voice: MCP payload is not JSON: %w", err)
	}
	var v any
	switch m.Type {
	case MCPRegister:
		v = new(Register)
	case MCPCall:
		v = new(Call)
	case MCPResult:
		v = new(Result)
	default:
		return &m, fmt.Errorf("voice: unknown MCP message type %q", m.Type)
	}
	if len(m.Data) == 0 || bytes.Equal(m.Data, []byte("null")) {
		return nil, fmt.Errorf("voice: MCP %s message has no data", m.Type)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		return nil, fmt.Errorf("voice: MCP %s data: %w", m.Type, err)
	}
	switch c := v.(type) {
	case *Call:
		if c.CallID == "" || c.Method == "" {
			return nil, fmt.Errorf("voice: MCP call needs call_id and method (got call_id %q, method %q)", c.CallID, c.Method)
		}
	case *Result:
		if c.CallID == "" {
			return nil, fmt.Errorf("voice: MCP result has no call_id")
		}
	}
	return v, nil
}

// MarshalMCP wraps data in an envelope of the given type. Map keys come out
// sorted, so equal service sets marshal to equal bytes.
func MarshalMCP(typ string, data any) ([]byte, error) {
	d, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("voice: MCP %s: %w", typ, err)
	}
	p, err := json.Marshal(MCPMessage{Type: typ, Data: d})
	return EscapeJSONMarkers(p), err
}

// EscapeJSONMarkers rewrites frame markers inside a JSON document so it can
// be framed: "##END" becomes "#\u0023END", which decodes to the same string.
// Outside strings JSON has no '#', so the rewrite is always lossless.
func EscapeJSONMarkers(p []byte) []byte {
	for _, m := range [][]byte{endBytes, startBytes} {
		if bytes.Contains(p, m) {
			p = bytes.ReplaceAll(p, m, append([]byte(`#\u0023`), m[2:]...))
		}
	}
	return p
}

// MCPFrame wraps a marshalled MCP payload in a frame on the MCP task.
func MCPFrame(payload []byte) Frame {
	return Frame{Type: TypeMCP, Task: MCPTask, Payload: payload}
}
