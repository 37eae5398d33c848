package control_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/internal/longtest"
)

// serve runs a control server with the endpoints add adds on a socket in
// a new short folder, until the test ends, and returns the socket's path.
func serve(t *testing.T, add func(s *control.Server)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "control.sock")
	s := control.NewServer(path, slog.New(slog.DiscardHandler))
	// This process is the client: the server refuses the descendants of
	// another (a child of this one), as a daemon refuses its own.
	control.ActAsDaemon(s, otherDaemon(t))
	add(s)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- s.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return path
}

// post sends body to endpoint over the socket at path, without the
// package's client, and returns the status and the answer.
func post(t *testing.T, path, endpoint string, body io.Reader) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	resp, err := c.Post("http://agenthost"+endpoint, "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type request struct {
	Service string `json:"service"`
}

// TestBodyOverTheLimitIs413: a request body over the control socket's
// limit is refused with 413 naming the limit, whether it is whitespace or
// a JSON value cut by the limit; one under the limit is served.
func TestBodyOverTheLimitIs413(t *testing.T) {
	path := serve(t, func(s *control.Server) {
		control.HandleJSON(s, "POST /v1/echo", func(_ context.Context, in request) (any, error) {
			return map[string]int{"len": len(in.Service)}, nil
		})
	})
	const limit = 1 << 20
	for _, c := range []struct {
		name string
		body string
	}{
		{"whitespace", strings.Repeat(" ", limit+1) + "{}"},
		{"a JSON value", `{"service":"` + strings.Repeat("x", limit) + `"}`},
	} {
		code, answer := post(t, path, "/v1/echo", strings.NewReader(c.body))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(answer, "1 MiB") {
			t.Errorf("%s of %d bytes: %d %s, want 413 naming the 1 MiB limit", c.name, len(c.body), code, answer)
		}
	}
	body := `{"service":"` + strings.Repeat("x", limit-100) + `"}`
	if code, answer := post(t, path, "/v1/echo", strings.NewReader(body)); code != http.StatusOK || !strings.Contains(answer, `"len":`) {
		t.Errorf("a body under the limit: %d %s", code, answer)
	}
}

// TestAClientWaitsAsLongAsTheCall: the client has no deadline of its own
// (the daemon ends a call at the service's deadline): a call that takes
// longer than a minute is answered, and the daemon's handler is not
// cancelled. It takes a minute: a long test (AGENTHOST_LONG_TESTS=1).
func TestAClientWaitsAsLongAsTheCall(t *testing.T) {
	if !longtest.Enabled() {
		t.Skip("a call of 65 s: runs with AGENTHOST_LONG_TESTS=1 (scripts/test.sh)")
	}
	t.Parallel()
	const takes = 65 * time.Second
	cancelled := make(chan error, 1)
	path := serve(t, func(s *control.Server) {
		control.HandleJSON(s, "POST /v1/slow", func(ctx context.Context, _ request) (any, error) {
			select {
			case <-time.After(takes):
				return map[string]string{"answer": "done"}, nil
			case <-ctx.Done():
				cancelled <- ctx.Err()
				return nil, ctx.Err()
			}
		})
	})
	var out struct{ Answer string }
	err := control.NewClient(path).Do(context.Background(), "POST /v1/slow", request{Service: "slow"}, &out)
	if err != nil || out.Answer != "done" {
		t.Errorf("a call of %s: %+v, %v", takes, out, err)
	}
	select {
	case err := <-cancelled:
		t.Errorf("the daemon's handler was cancelled: %v", err)
	default:
	}
}

// theirs makes a folder of nobody's (65534) with mode perm, with a socket
// in it listening as an impostor would: its path, and how many
// connections it got. Only root can; others skip.
func theirs(t *testing.T, perm os.FileMode, sockOwner int) (string, func() int) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("only root can give a folder to another user")
	}
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "control.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan struct{}, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- struct{}{}
			c.Close()
		}
	}()
	if err := os.Chown(path, sockOwner, sockOwner); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return path, func() int { return len(conns) }
}

// TestTheClientRefusesASocketAnotherUserCouldHavePut: the CLI does not
// speak to a socket in a folder any user may write to (nobody's, 0777:
// nobody could have moved the daemon's socket aside), nor to one that
// belongs to a user other than this one, root or its folder's owner; it
// says why, and the impostor gets no connection.
func TestTheClientRefusesASocketAnotherUserCouldHavePut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perm      os.FileMode
		sockOwner int
		want      string
	}{
		{"folder of nobody, 0777", 0o777, 65534, "0777"},
		{"folder of nobody, socket of another user", 0o755, 1234, "1234"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, got := theirs(t, tc.perm, tc.sockOwner)
			err := control.NewClient(path).Do(context.Background(), "POST /v1/say", map[string]string{"text": "the door code is 4711"}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Dir(path)) {
				t.Errorf("err = %v, want a refusal naming %s and %s", err, filepath.Dir(path), tc.want)
			}
			if n := got(); n != 0 {
				t.Errorf("the impostor's socket got %d connections", n)
			}
		})
	}
}

// TestTheServerRefusesAFolderOfAnotherUser: the control socket is not put
// in a folder that another user owns or any user may write to.
func TestTheServerRefusesAFolderOfAnotherUser(t *testing.T) {
	path, _ := theirs(t, 0o777, 65534)
	os.Remove(path)
	s := control.NewServer(path, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.Run(ctx, func() {
		t.Error("the control socket was put in nobody's folder")
		cancel()
	})
	if err == nil || !strings.Contains(err.Error(), filepath.Dir(path)) {
		t.Errorf("err = %v, want a refusal naming the folder", err)
	}
}
