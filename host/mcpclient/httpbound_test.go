package mcpclient_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
)

// TestHTTPResponseIsBounded: a remote server's answer is read only up to
// the bound on one MCP message, as a JSON body or as one SSE event, and
// refused with an error that names the bound (found by attack: a 400 MiB
// JSON body took the host to ~930 MB, again on each retry).
func TestHTTPResponseIsBounded(t *testing.T) {
	const size = 64 << 20 // four times the bound
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[sse], func(t *testing.T) {
			srv := mcptest.StartHuge(t, sse, size)
			log, logs := newLog()
			_, err := startErr(t, mcpclient.Options{Name: "huge", Server: mcpclient.ServerConfig{URL: srv.URL + "/mcp", Type: "http"}, Log: log}, 30*time.Second)
			t.Logf("the server wrote %.1f MiB", float64(srv.Written())/(1<<20))
			if err == nil {
				t.Fatal("a server whose answers are 64 MiB started")
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), "bound on one MCP message") {
				t.Errorf("error %q does not name the bound", err)
			}
			// What the client read is bounded; the kernel's socket buffers
			// on loopback hold a few MiB more.
			if w := srv.Written(); w > mcpclient.DefaultMaxMessage+16<<20 {
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
