package control_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
)

// otherDaemon starts a process that sleeps until the test ends, for a
// server to take for its daemon: this process does not descend from it.
func otherDaemon(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// clientEnv names the socket the test binary, started as a client by
// TestTheDaemonsOwnProcessesAreRefused, posts to.
const clientEnv = "CONTROL_TEST_CLIENT_SOCKET"

// TestMain makes the test binary a client of the socket clientEnv names:
// it posts mic on and prints "STATUS BODY".
func TestMain(m *testing.M) {
	if path := os.Getenv(clientEnv); path != "" {
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}
		resp, err := c.Post("http://agenthost/v1/device/mic", "application/json", strings.NewReader(`{"on":true}`))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, strings.TrimSpace(string(b)))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTheDaemonsOwnProcessesAreRefused: a control server run by this
// process (the daemon here) refuses with 403 a request from this process,
// from its child and from a grandchild, before the endpoint runs; the log
// names the caller and the child it descends from. A server whose daemon
// is another process serves this one.
func TestTheDaemonsOwnProcessesAreRefused(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "control.sock")
	log := &testbin.Buffer{}
	s := control.NewServer(path, slog.New(slog.NewTextHandler(log, nil)))
	var ran atomic.Int32
	control.HandleJSON(s, "POST /v1/device/mic", func(context.Context, struct{}) (any, error) {
		ran.Add(1)
		return "on", nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- s.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })

	code, body := post(t, path, "/v1/device/mic", strings.NewReader(`{"on":true}`))
	if code != http.StatusForbidden || !strings.Contains(body, control.RefusedMessage) {
		t.Errorf("from the daemon itself: %d %s", code, body)
	}
	exe, _ := os.Executable()
	for _, c := range []struct {
		who string
		cmd *exec.Cmd
	}{
		{"a child", exec.Command(exe)},
		{"a grandchild", exec.Command("sh", "-c", `"$0"; true`, exe)},
	} {
		c.cmd.Env = append(os.Environ(), clientEnv+"="+path)
		out, err := c.cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "403 ") || !strings.Contains(string(out), control.RefusedMessage) {
			t.Errorf("from %s: %v %s", c.who, err, out)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the endpoint ran %d times for refused callers", n)
	}
	if !strings.Contains(log.String(), "the control socket refused a process started by agenthost") ||
		!strings.Contains(log.String(), "child=\"sh (pid ") {
		t.Errorf("the log does not name the refused callers:\n%s", log)
	}

	// A server whose daemon is another process serves this one.
	other := serve(t, func(s *control.Server) {
		control.HandleJSON(s, "POST /v1/device/mic", func(context.Context, struct{}) (any, error) { return "on", nil })
	})
	if code, body := post(t, other, "/v1/device/mic", strings.NewReader(`{"on":true}`)); code != http.StatusOK {
		t.Errorf("from a process the daemon did not start: %d %s", code, body)
	}
}

// TestDecide: the daemon (this process) and its child are refused as its
// own; its parent is not its descendant; a peer that is gone, or whose PID
// belongs to a process started after the connection was accepted, or that
// has no PID, is refused; another user's process is the owner's when the
// daemon is not root; a daemon that is not a child subreaper refuses its
// own user's processes.
func TestDecide(t *testing.T) {
	self, uid := os.Getpid(), os.Geteuid()
	decide := func(p control.Peer, daemonUID int) control.Verdict {
		t.Helper()
		v, err := control.Decide(p, self, daemonUID, true)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	now := control.BootTicks()
	child := exec.Command("sleep", "3600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pc, err := procs.Stat(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	later := control.BootTicks()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name       string
		peer       control.Peer
		daemonUID  int
		allowed    bool
		descendant bool
		why        string
	}{
		{"the daemon itself", control.Peer{PID: self, UID: uid, Accepted: now}, uid, false, true, ""},
		{"its child", control.Peer{PID: child.Process.Pid, UID: uid, Accepted: later}, uid, false, true, ""},
		{"its parent", control.Peer{PID: os.Getppid(), UID: uid, Accepted: later}, uid, true, false, ""},
		{"a peer that is gone", control.Peer{PID: gone.Process.Pid, UID: uid, Accepted: control.BootTicks()}, uid, false, false, "gone"},
		{"a PID reused after the accept", control.Peer{PID: child.Process.Pid, UID: uid, Accepted: pc.Start - 1}, uid, false, false, "started after the connection"},
		{"no PID", control.Peer{UID: uid, Accepted: later}, uid, false, false, "no process id"},
		{"another user's, the daemon not root", control.Peer{PID: child.Process.Pid, UID: 4242, Accepted: later}, 4243, true, false, ""},
	} {
		v := decide(c.peer, c.daemonUID)
		if v.Allowed != c.allowed || v.Descendant != c.descendant || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: %+v, want allowed %v, descendant %v, why %q", c.name, v, c.allowed, c.descendant, c.why)
		}
	}
	// A daemon that is not a subreaper cannot tell its user's processes
	// from the orphans of its own: it refuses them, not another user's.
	parent := control.Peer{PID: os.Getppid(), UID: uid, Accepted: later}
	if v, _ := control.Decide(parent, self, uid, false); v.Allowed || !strings.Contains(v.Why, "not a child subreaper") {
		t.Errorf("its parent, the daemon not a subreaper: %+v", v)
	}
	parent.UID = uid + 1
	if v, _ := control.Decide(parent, self, uid+2, false); !v.Allowed {
		t.Errorf("another user's process, the daemon not a subreaper: %+v", v)
	}
	if v := decide(control.Peer{PID: child.Process.Pid, UID: uid, Accepted: later}, uid); v.Child != fmt.Sprintf("sleep (pid %d)", child.Process.Pid) {
		t.Errorf("the child named: %q", v.Child)
	}
}
