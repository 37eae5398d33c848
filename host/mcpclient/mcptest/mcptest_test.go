package mcptest

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStartEverythingTakesAnotherPortWhenItsFirstIsTaken: the port
// StartEverything picks can be taken before server-everything binds it
// (FreePort closes its listener first; another test or an outgoing
// connection may get the port in between). The server then exits at once
// (streamableHttp after "listening", sse after "running": Express 5 calls
// the listen callback with the error), and StartEverything must start it
// again on another port, not fail or hand back a port someone else holds.
func TestStartEverythingTakesAnotherPortWhenItsFirstIsTaken(t *testing.T) {
	for _, mode := range []string{"sse", "streamableHttp"} {
		t.Run(mode, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			occupied := taken.Addr().(*net.TCPAddr).Port
			var picked []int
			pick := func(t testing.TB) int {
				p := occupied
				if len(picked) > 0 {
					p = FreePort(t)
				}
				picked = append(picked, p)
				return p
			}

			s := startEverything(t, mode, pick)
			if s.Port == occupied {
				t.Fatalf("server-everything %s is said to run on port %d, which another listener holds (ports picked: %v)", mode, occupied, picked)
			}
			if len(picked) < 2 {
				t.Fatalf("ports picked %v: want the taken one, then another", picked)
			}
			select {
			case <-s.done:
				t.Fatalf("server-everything %s has exited", mode)
			default:
			}
			everythingAnswers(t, s, mode)
		})
	}
}

// TestStartEverythingOnWaitsForItsPort: StartEverythingOn (a server
// brought back where it was) tries the same port again while something
// else still holds it, and runs there once it is free.
func TestStartEverythingOnWaitsForItsPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := taken.Addr().(*net.TCPAddr).Port
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(700 * time.Millisecond)
		taken.Close()
	}()
	defer func() { <-released }()
	s := StartEverythingOn(t, "streamableHttp", port)
	if s.Port != port {
		t.Fatalf("port %d, want %d", s.Port, port)
	}
	everythingAnswers(t, s, "streamableHttp")
}

// everythingAnswers checks that server-everything (not something else)
// answers HTTP on s's port: the SSE endpoint sends its "endpoint" event,
// the Streamable HTTP one refuses a GET without a session in JSON-RPC.
func everythingAnswers(t *testing.T, s *Server, mode string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path, want := "/mcp", "No valid session ID"
	if mode == "sse" {
		path, want = "/sse", "event: endpoint"
	}
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", s.URL(path), err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return
		}
	}
	t.Fatalf("GET %s: %s, no %q in the answer (%v)", s.URL(path), resp.Status, want, sc.Err())
}
