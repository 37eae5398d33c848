// Package mcptest finds, and installs when missing, the third-party MCP
// programs the tests run against (scripts/install-mcp-test-deps.sh:
// @modelcontextprotocol/server-everything and the MCP Inspector), starts
// server-everything in its HTTP modes on a free loopback port, and starts
// hostile HTTP servers (Huge). For tests only.
package mcptest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	done chan struct{}
}

// StartEverything runs server-everything in mode "sse" or "streamableHttp"
// on a free port, waits until it accepts connections, and stops it when
// the test ends. Its endpoint is URL("/sse") or URL("/mcp").
func StartEverything(t testing.TB, mode string) *Server {
	t.Helper()
	return startEverything(t, mode, FreePort)
}

// startEverything is StartEverything with the port taken from pick (the
// package's test gives one whose first port is taken).
func startEverything(t testing.TB, mode string, pick func(testing.TB) int) *Server {
	t.Helper()
	return StartEverythingOn(t, mode, pick(t))
}

// StartEverythingOn is StartEverything on a given port (to bring a server
// back where it was).
func StartEverythingOn(t testing.TB, mode string, port int) *Server {
	t.Helper()
	bin := Bin(t, "mcp-server-everything")
	s := &Server{Port: port, done: make(chan struct{})}
	s.cmd = exec.Command(bin, mode)
	s.cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", s.Port))
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("server-everything %s: %s", mode, sc.Text())
		}
	}()
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("server-everything %s exited before listening", mode)
		case <-ctx.Done():
			t.Fatalf("server-everything %s did not listen on port %d", mode, s.Port)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URL is the server's address with the given path.
func (s *Server) URL(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", s.Port, path) }

// Stop ends the server (its whole process group) and waits for it.
func (s *Server) Stop() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// Running reports whether a process whose command line contains every one
// of parts is alive (a zombie does not count), to show that a test left
// no process behind.
func Running(parts ...string) bool { return len(procs.Find(parts...)) > 0 }
