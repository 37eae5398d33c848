package procwait

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// watchSleeper starts a process that runs until killed and watches it.
func watchSleeper(t *testing.T) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	exited, err := Watch(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	return cmd, exited
}

// killAndSee kills cmd, reaps it and waits for exited to say so.
func killAndSee(t *testing.T, cmd *exec.Cmd, exited <-chan struct{}) {
	t.Helper()
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the exit was not seen")
	}
}

func TestWatchSeesTheExitAndNotBefore(t *testing.T) {
	cmd, exited := watchSleeper(t)
	select {
	case <-exited:
		t.Fatal("reported an exit of a running process")
	case <-time.After(100 * time.Millisecond):
	}
	killAndSee(t, cmd, exited)
}

// TestTheWatchLeavesNoDescriptor: once the exit is seen the pidfd is
// closed, not left to the garbage collector (found by review: a plugin
// host that restarts plugins for months holds one per start until a GC).
func TestTheWatchLeavesNoDescriptor(t *testing.T) {
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	before := fds() // Go's os.Process holds a pidfd of its own until Wait
	cmd, exited := watchSleeper(t)
	killAndSee(t, cmd, exited)
	if after := fds(); after != before {
		t.Fatalf("%d open descriptors after the watch, %d before", after, before)
	}
}

// TestAnExitRightAfterWatchIsSeen: a process that exits before the watch's
// goroutine first waits is still seen (found while folding these tests: the
// poller forgets a readiness that came before the wait, so the first look
// must ask the pidfd itself; a plugin that died at once went unnoticed).
func TestAnExitRightAfterWatchIsSeen(t *testing.T) {
	for i := range 200 {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited, err := Watch(cmd.Process.Pid)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Skipf("no pidfd here: %v", err)
		}
		cmd.Process.Kill()
		cmd.Wait()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the exit was not seen", i)
		}
	}
}
