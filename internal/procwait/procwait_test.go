package procwait

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestWatchSeesTheExitAndNotBefore(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, err := Watch(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	select {
	case <-exited:
		t.Fatal("reported an exit of a running process")
	case <-time.After(100 * time.Millisecond):
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the exit was not seen")
	}
}

// TestTheWatchLeavesNoDescriptor: once the exit is seen the pidfd is
// closed, not left to the garbage collector (found by review: a plugin
// host that restarts plugins for months holds one per start until a GC).
func TestTheWatchLeavesNoDescriptor(t *testing.T) {
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	before := fds() // Go's os.Process holds a pidfd of its own until Wait
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, err := Watch(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the exit was not seen")
	}
	if after := fds(); after != before {
		t.Fatalf("%d open descriptors after the watch, %d before", after, before)
	}
}
