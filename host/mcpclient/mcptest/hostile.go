package mcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Huge is a hostile Streamable HTTP MCP server on loopback: it answers
// every request that has an ID with one message of Size bytes, as a JSON
// body or as one SSE event, and counts what it wrote before the client hung
// up. The answer is shaped as an initialize result (its server version is
// the padding), so a client that reads it whole takes it.
type Huge struct {
	*httptest.Server
	written  atomic.Int64
	answered atomic.Int64
}

// StartHuge starts a Huge server (an SSE event when sse, else a JSON body)
// and closes it when the test ends. Its endpoint is URL + "/mcp".
func StartHuge(t testing.TB, sse bool, size int) *Huge {
	h := &Huge{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		h.answered.Add(1)
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"huge","version":"`, req.ID)
		tail := `"}}}`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head, tail = "event: message\ndata: "+head, tail+"\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		write := func(b []byte) bool {
			n, err := w.Write(b)
			h.written.Add(int64(n))
			return err == nil
		}
		chunk := []byte(strings.Repeat("x", 64<<10))
		if !write([]byte(head)) {
			return
		}
		for left := size; left > 0; left -= len(chunk) {
			if !write(chunk[:min(left, len(chunk))]) {
				return
			}
		}
		write([]byte(tail))
	}))
	t.Cleanup(h.Close)
	return h
}

// Written is how many bytes the server has written, in all its answers.
func (h *Huge) Written() int64 { return h.written.Load() }

// Answered is how many requests with an ID it has begun to answer.
func (h *Huge) Answered() int64 { return h.answered.Load() }
