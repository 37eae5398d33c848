package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/lograte"
)

// sessionGate bounds the Streamable HTTP sessions open at once: a request
// that would open one more (a POST without Mcp-Session-Id) is refused
// while max are open. The go-sdk closes idle ones
// (StreamableHTTPOptions.SessionTimeout).
type sessionGate struct {
	srv     *mcp.Server
	max     int
	timeout time.Duration
	logs    *lograte.Limiter

	// mu is held by a request that may open a session, from the count to
	// its end: the go-sdk has then added the session, or removed it
	// (anything but initialize), so each count is exact. Such a request
	// is one message (initialize comes alone), read before mu is taken,
	// and quick.
	mu sync.Mutex
}

// open counts the sessions open (stdio ones, without an id, aside).
func (g *sessionGate) open() int {
	n := 0
	for ss := range g.srv.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// MaxBatch bounds the messages of one JSON-RPC batch (protocol versions
// up to 2025-03-26 have them): a request is never more than this many
// calls, whatever the calls in flight allow.
const MaxBatch = 32

// wrap serves h behind the gate and the batch bound.
func (g *sessionGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		opens := r.Header.Get("Mcp-Session-Id") == ""
		if n := batchLen(body); opens && n > 0 {
			http.Error(w, "Bad Request: a request without Mcp-Session-Id opens a session with initialize, which comes alone, not in a batch", http.StatusBadRequest)
			return
		} else if n > MaxBatch {
			http.Error(w, fmt.Sprintf("Bad Request: a JSON-RPC batch of more than %d messages, over the endpoint's bound of %d per request; send fewer at once", MaxBatch, MaxBatch), http.StatusBadRequest)
			return
		}
		if !opens {
			h.ServeHTTP(w, r)
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if open := g.open(); open >= g.max {
			g.logs.Warn("refused a new MCP session: as many are open as may be", "open", open, "setting", "mcp.serve.max_sessions", "remote", r.RemoteAddr)
			w.Header().Set("Retry-After", "60")
			http.Error(w, fmt.Sprintf("Service Unavailable: %d MCP sessions are open, the limit (mcp.serve.max_sessions); "+
				"a session that sends nothing for %s closes (mcp.serve.session_timeout), or end yours with DELETE", open, g.timeout), http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// batchLen counts a JSON-RPC batch's messages, up to MaxBatch+1; 0 when
// the body is not a batch (one message, or not JSON: the go-sdk says so).
func batchLen(body []byte) int {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.Token() // [
	n := 0
	for dec.More() && n <= MaxBatch {
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		n++
	}
	return max(n, 1)
}

// readBody reads a POST's body (at most the go-sdk's bound) and puts it
// back for the handler to read again; a body too large or cut short is
// answered here.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body is over %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "Bad Request: the body could not be read: "+err.Error(), http.StatusBadRequest)
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, true
}
