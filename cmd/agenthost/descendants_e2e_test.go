package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestNoDescendantOutlivesTheHost: a stdio MCP server that double-forks a
// setsid grandchild (out of its process group and session, an orphan at
// once): the host adopts the orphan (it is a child subreaper), kills it
// when the server crashes and is restarted, reaps it (no zombie is left),
// and leaves none running after its own exit.
func TestNoDescendantOutlivesTheHost(t *testing.T) {
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	tag := fmt.Sprintf("host-%d", time.Now().UnixNano())
	lingering := func() []procs.Proc { return procs.Find("-mode linger -grandchild " + tag) }
	t.Cleanup(func() {
		for _, p := range lingering() {
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{"mcp": map[string]any{"servers": map[string]any{
		"toy": map[string]any{"command": toy, "args": []any{"-grandchild", tag}},
	}}})
	host := f.cmd.Process.Pid
	waitFor(t, sim, "the server's tools", func() bool { _, ok := sim.Services()["add"]; return ok })
	var first []procs.Proc
	waitFor(t, sim, "the first grandchild", func() bool { first = lingering(); return len(first) == 1 })
	if first[0].PPID != host {
		t.Errorf("the orphaned grandchild's parent is %d, not the host (%d): the host is not a subreaper", first[0].PPID, host)
	}

	var server int
	for _, p := range procs.All() {
		if p.PPID == host && strings.Contains(p.Cmdline, toy+" -grandchild "+tag) {
			server = p.PID
		}
	}
	if server == 0 {
		t.Fatal("the server is not a child of the host")
	}
	syscall.Kill(server, syscall.SIGKILL)
	f.logShows("MCP server restarted")
	if !procs.Gone(first[0].PID, 15*time.Second) {
		t.Errorf("the grandchild %d of the server that crashed outlived it", first[0].PID)
	}
	zombies := func() (out []int) {
		for _, p := range procs.All() {
			if p.PPID == host && p.State == 'Z' {
				out = append(out, p.PID)
			}
		}
		return out
	}
	for deadline := time.Now().Add(15 * time.Second); len(zombies()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if z := zombies(); len(z) > 0 {
		t.Errorf("zombies left unreaped under the host: %v", z)
	}
	var second procs.Proc
	waitFor(t, sim, "the second grandchild", func() bool {
		for _, p := range lingering() {
			if p.PID != first[0].PID {
				second = p
			}
		}
		return second.PID != 0
	})

	if err := f.stop(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !procs.Gone(second.PID, 15*time.Second) {
		t.Errorf("the grandchild %d outlived the host", second.PID)
	}
}
