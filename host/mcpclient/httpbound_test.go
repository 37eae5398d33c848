package mcpclient_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
)

// hugeServer is a hostile Streamable HTTP MCP server: it answers every
// request that has an ID with one message of size bytes (a JSON body, or one
// SSE event), and counts what it managed to write before the client hung up.
type hugeServer struct {
	*httptest.Server
	written atomic.Int64
}

func newHugeServer(t *testing.T, sse bool, size int) *hugeServer {
	h := &hugeServer{}
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

// TestHTTPResponseIsBounded: a remote server's answer is read only up to
// the bound on one MCP message, as a JSON body or as one SSE event, and
// refused with an error that names the bound (found by attack: a 400 MiB
// JSON body took the host to ~930 MB, again on each retry).
func TestHTTPResponseIsBounded(t *testing.T) {
	const size = 64 << 20 // four times the bound
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[sse], func(t *testing.T) {
			srv := newHugeServer(t, sse, size)
			log, logs := newLog()
			_, err := startErr(t, mcpclient.Options{Name: "huge", Server: mcpclient.ServerConfig{URL: srv.URL + "/mcp", Type: "http"}, Log: log}, 30*time.Second)
			t.Logf("the server wrote %.1f MiB", float64(srv.written.Load())/(1<<20))
			if err == nil {
				t.Fatal("a server whose answers are 64 MiB started")
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), "bound on one MCP message") {
				t.Errorf("error %q does not name the bound", err)
			}
			// What the client read is bounded; the kernel's socket buffers
			// on loopback hold a few MiB more.
			if w := srv.written.Load(); w > mcpclient.DefaultMaxMessage+16<<20 {
				t.Errorf("the server wrote %d bytes before the client hung up, over the bound (%d) and the buffers", w, mcpclient.DefaultMaxMessage)
			}
			wantLog(t, logs, "mcp server did not start", "16 MiB")
		})
	}
}

// TestStdioLineIsBounded: the same bound holds for a line on a stdio
// server's stdout, with the same words.
func TestStdioLineIsBounded(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}, Log: log, MaxMessage: 1 << 20})
	if _, err := call(t, s, "big", `{"n":2000000}`); err == nil {
		t.Fatal("a 2 MB result over a 1 MiB bound was accepted")
	}
	<-s.Done()
	wantLog(t, logs, "level=ERROR", "mcp=toy", "the server sent a line on stdout over 1 MiB, the bound on one MCP message")
}
