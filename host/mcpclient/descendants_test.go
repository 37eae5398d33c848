package mcpclient_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/procs"
)

// lingering lists the live grandchildren mcptoy -grandchild tag left.
func lingering(tag string) []int {
	var out []int
	for _, p := range procs.Find("-mode linger -grandchild " + tag) {
		out = append(out, p.PID)
	}
	return out
}

// grandchildTag returns a new tag for mcptoy -grandchild, whose processes
// are killed when the test ends, should they outlive it.
func grandchildTag(t *testing.T) string {
	tag := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		for _, pid := range lingering(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return tag
}

// TestNoDescendantOutlivesItsServer: a stdio server that double-forks a
// setsid grandchild (out of its process group and session, an orphan at
// once) leaves none running after a crash and its restart, nor after
// the supervisor stops it.
func TestNoDescendantOutlivesItsServer(t *testing.T) {
	tag := grandchildTag(t)
	log, logs := newLog()
	sup, r := supervised(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t), Args: []string{"-grandchild", tag}}, Log: log}, supervise.Crash)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs)
		}
	})
	if !registered(r, "add") {
		t.Fatalf("registered: %v", r.Names())
	}
	var first []int
	eventually(t, "the first grandchild", func() bool { first = lingering(tag); return len(first) == 1 })

	pid := sup.Status().Info.PID
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, "the restart", func() bool { return registered(r, "add") && sup.Status().Info.PID != pid && sup.Status().Info.PID != 0 })
	if !procs.Gone(first[0], 15*time.Second) {
		t.Errorf("the grandchild %d of the server that crashed outlived it", first[0])
	}
	var second []int
	eventually(t, "the second grandchild", func() bool {
		second = lingering(tag)
		return len(second) > 0 && second[len(second)-1] != first[0]
	})

	sup.Stop()
	for _, g := range second {
		if !procs.Gone(g, 15*time.Second) {
			t.Errorf("the grandchild %d outlived the server's stop", g)
		}
	}
}
