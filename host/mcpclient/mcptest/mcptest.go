// Package mcptest finds, and installs when missing, the third-party MCP
// programs the tests run against (scripts/install-mcp-test-deps.sh:
// @modelcontextprotocol/server-everything and the MCP Inspector), starts
// server-everything in its HTTP modes on a free loopback port, and starts
// hostile HTTP servers (Huge). For tests only.
package mcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"

	"github.com/agenthost/agenthost/internal/testbin"
)

var (
	once sync.Once
	dir  string
	err  error
)

// Deps returns the folder the test programs are installed in (its
// node_modules/.bin holds them), running the install script the first time,
// and puts a Node the script installed first on this process's PATH.
// AGENTHOST_MCP_TEST_DEPS names another folder.
func Deps(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		script := filepath.Join(testbin.ModuleRoot(t), "scripts", "install-mcp-test-deps.sh")
		cmd := exec.Command("bash", script)
		cmd.Stderr = os.Stderr
		out, e := cmd.Output()
		if e != nil {
			err = fmt.Errorf("%s failed: %v (it needs Node >= 20 and npm with the npm registry)", script, e)
			return
		}
		dir = strings.TrimSpace(string(out))
		// Where the machine's Node is too old the script installed one in
		// node_modules/.bin; the programs' "#!/usr/bin/env node" finds it first.
		bin := filepath.Join(dir, "node_modules", ".bin")
		if _, e := os.Stat(filepath.Join(bin, "node")); e == nil {
			os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Bin returns the path of an installed program: "mcp-server-everything",
// "mcp-inspector".
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Deps(t), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: %v", name, err)
	}
	return p
}

// FreePort returns a loopback port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is server-everything running in an HTTP mode.
type Server struct {
	Port int
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for and its stderr logged
}

// tries is how many times StartEverything and StartEverythingOn start
// server-everything when it exits before listening.
const tries = 5

// errExited is a start that ended with server-everything exiting before
// it listened: most likely its port was taken (server-everything exits on
// EADDRINUSE, after printing that it listens).
var errExited = errors.New("exited before listening")

// StartEverything runs server-everything in mode "sse" or "streamableHttp"
// on a free port, waits until it accepts connections, and stops it when
// the test ends. Its endpoint is URL("/sse") or URL("/mcp").
//
// The port FreePort found can be taken before server-everything binds it
// (by another test, or as an outgoing connection's local port); then it
// exits, and StartEverything starts it again on another port, up to tries
// times.
func StartEverything(t testing.TB, mode string) *Server {
	t.Helper()
	return startEverything(t, mode, FreePort)
}

// startEverything is StartEverything with the ports taken from pick (the
// package's test gives one whose first port is taken).
func startEverything(t testing.TB, mode string, pick func(testing.TB) int) *Server {
	t.Helper()
	var failed []string
	for range tries {
		port := pick(t)
		s, err := start(t, mode, port)
		if err == nil {
			return s
		}
		if !errors.Is(err, errExited) {
			t.Fatal(err)
		}
		t.Logf("%v; trying another port", err)
		failed = append(failed, err.Error())
	}
	t.Fatalf("server-everything %s did not start in %d tries, each on a fresh port:\n%s", mode, tries, strings.Join(failed, "\n"))
	return nil
}

// StartEverythingOn is StartEverything on a given port (to bring a server
// back where it was). When server-everything exits before listening (the
// port is taken, or not yet free) it tries again on the same port after a
// short pause, up to tries times.
func StartEverythingOn(t testing.TB, mode string, port int) *Server {
	t.Helper()
	var failed []string
	for i := range tries {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		s, err := start(t, mode, port)
		if err == nil {
			return s
		}
		if !errors.Is(err, errExited) {
			t.Fatal(err)
		}
		t.Logf("%v; trying the same port again", err)
		failed = append(failed, err.Error())
	}
	t.Fatalf("server-everything %s did not start on port %d in %d tries (another program may hold the port):\n%s", mode, port, tries, strings.Join(failed, "\n"))
	return nil
}

// start runs server-everything once on port and waits until it listens
// there. On success the server is stopped when the test ends; on an error
// its process group has been killed and waited for, and the error (errExited
// when it exited by itself) quotes the last lines it wrote on stderr.
func start(t testing.TB, mode string, port int) (*Server, error) {
	t.Helper()
	bin := Bin(t, "mcp-server-everything")
	s := &Server{Port: port, done: make(chan struct{})}
	stderr := &lineLog{t: t, prefix: "server-everything " + mode + ": "}
	s.cmd = exec.Command(bin, mode)
	s.cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", s.Port))
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// exec copies stderr in its own goroutine and Wait waits for the copy
	// (for WaitDelay at most once the process has exited), so nothing is
	// logged after done is closed, and Stop (a cleanup) waits for done: no
	// t.Logf after the test has ended.
	s.cmd.Stderr = stderr
	s.cmd.WaitDelay = time.Second
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("server-everything %s: %v", mode, err)
	}
	go func() {
		s.cmd.Wait()
		stderr.flush()
		close(s.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		// A port that accepts connections is not enough: another program
		// may hold it while server-everything fails to bind it. The
		// listening socket must be the server's.
		if listensOn(s.cmd.Process.Pid, s.Port) {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second)
			if err == nil {
				c.Close()
				t.Cleanup(s.Stop)
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("server-everything %s on port %d (%v): %w; its stderr ends: %q", mode, s.Port, s.cmd.ProcessState, errExited, stderr.last())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("server-everything %s did not listen on port %d in 30s; its stderr ends: %q", mode, s.Port, stderr.last())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listensOn reports whether process pid holds a listening TCP socket on
// port (any address, IPv4 or IPv6), from /proc/net/tcp{,6} and the
// process's file descriptors.
func listensOn(pid, port int) bool {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return false
	}
	fd := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fd)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(fd, e.Name())); err == nil && inodes[l] {
			return true
		}
	}
	return false
}

// lineLog logs what a program writes, a line at a time, and keeps its
// last lines for an error message.
type lineLog struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	part   []byte
	tail   []string
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, b...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	return len(b), nil
}

// flush logs a last line that had no newline.
func (l *lineLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.line(string(l.part))
		l.part = nil
	}
}

func (l *lineLog) line(s string) {
	l.t.Logf("%s%s", l.prefix, s)
	if l.tail = append(l.tail, s); len(l.tail) > 3 {
		l.tail = l.tail[1:]
	}
}

// last returns the last lines logged, joined.
func (l *lineLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail, "\n")
}

// URL is the server's address with the given path.
func (s *Server) URL(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", s.Port, path) }

// Stop ends the server (its whole process group) and waits for it. A
// server already stopped is left alone.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// Running reports whether a process whose command line contains every one
// of parts is alive (a zombie does not count), to show that a test left
// no process behind.
func Running(parts ...string) bool { return len(procs.Find(parts...)) > 0 }
