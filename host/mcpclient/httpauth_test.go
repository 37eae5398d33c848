package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/mcpclient"
)

// seen records the requests an HTTP server received.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request // clones, without bodies
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Clone(context.Background()))
	s.mu.Unlock()
}

func (s *seen) all() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// mcpHandler is a real Streamable HTTP MCP server (the go-sdk's) with one
// tool, ping, that records every request it gets.
func mcpHandler(rec *seen) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "redirected", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		h.ServeHTTP(w, r)
	})
}

// redirectTo answers every request with a 307 to target (the method and
// body are kept), recording it.
func redirectTo(rec *seen, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	})
}

// TestHeadersNeverFollowARedirectToAnotherOrigin: the configured headers
// and the URL's query token go only to the configured server's origin
// (scheme, host, port). A server that redirects elsewhere gets them neither
// as headers nor in a Referer; a redirect within the origin keeps the
// headers (found by attack: the headers were added at the transport, so
// net/http's stripping on a cross-host redirect never saw them, and the
// Referer carried the query).
func TestHeadersNeverFollowARedirectToAnotherOrigin(t *testing.T) {
	const token = "s3cr3t-t0ken"
	headers := map[string]string{"Authorization": "Bearer hunter2-bearer", "X-Api-Key": "k3y-v4lue"}
	secrets := []string{token, "hunter2-bearer", "k3y-v4lue"}
	leaks := func(r *http.Request) []string {
		var out []string
		if v := r.Header.Get("Referer"); v != "" {
			out = append(out, "a Referer: "+v)
		}
		for k, vs := range r.Header {
			if k == "Referer" {
				continue // said above
			}
			for _, v := range vs {
				for _, s := range secrets {
					if strings.Contains(v, s) {
						out = append(out, "header "+k+": "+v)
					}
				}
			}
		}
		for _, s := range secrets {
			if strings.Contains(r.URL.String(), s) {
				out = append(out, "the URL "+r.URL.String())
			}
		}
		return out
	}

	t.Run("another origin", func(t *testing.T) {
		var atB, atA seen
		b := httptest.NewServer(mcpHandler(&atB))
		t.Cleanup(b.Close)                                                    // after the session's Kill (cleanups run last first)
		other := strings.Replace(b.URL, "127.0.0.1", "localhost", 1) + "/mcp" // another host, another port
		a := httptest.NewServer(redirectTo(&atA, other))
		t.Cleanup(a.Close) // after the session's Kill (cleanups run last first)
		s := start(t, mcpclient.Options{Name: "redirected", Server: mcpclient.ServerConfig{URL: a.URL + "/mcp?token=" + token, Headers: headers}})
		if got, err := call(t, s, "ping", `{}`); err != nil || got != `"pong"` {
			t.Fatalf("ping through the redirect = %s, %v", got, err)
		}
		if len(atB.all()) == 0 {
			t.Fatal("the other origin got no request: the redirect was not followed")
		}
		for _, r := range atB.all() {
			for _, l := range leaks(r) {
				t.Errorf("%s %s at the other origin carried %s", r.Method, r.URL, l)
			}
		}
		// The configured origin still gets them.
		for _, r := range atA.all() {
			if r.Header.Get("Authorization") != headers["Authorization"] || r.Header.Get("X-Api-Key") != headers["X-Api-Key"] || r.URL.Query().Get("token") != token {
				t.Errorf("%s %s at the configured server lacks its headers or token: %v", r.Method, r.URL, r.Header)
			}
		}
	})

	t.Run("the same origin", func(t *testing.T) {
		var at seen
		mux := http.NewServeMux()
		mux.Handle("/old", redirectTo(&at, "/mcp"))
		mux.Handle("/mcp", mcpHandler(&at))
		a := httptest.NewServer(mux)
		t.Cleanup(a.Close) // after the session's Kill (cleanups run last first)
		s := start(t, mcpclient.Options{Name: "moved", Server: mcpclient.ServerConfig{URL: a.URL + "/old?token=" + token, Headers: headers}})
		if got, err := call(t, s, "ping", `{}`); err != nil || got != `"pong"` {
			t.Fatalf("ping through the redirect = %s, %v", got, err)
		}
		n := 0
		for _, r := range at.all() {
			if r.URL.Path != "/mcp" {
				continue
			}
			n++
			if r.Header.Get("Authorization") != headers["Authorization"] || r.Header.Get("X-Api-Key") != headers["X-Api-Key"] {
				t.Errorf("%s %s within the origin lost the headers: %v", r.Method, r.URL, r.Header)
			}
			if v := r.Header.Get("Referer"); v != "" {
				t.Errorf("%s %s carried a Referer: %s", r.Method, r.URL, v)
			}
		}
		if n == 0 {
			t.Fatal("the redirect was not followed")
		}
	})
}
