package procwait

import (
	"os/exec"
	"testing"
	"time"
)

func TestWatchSeesTheExitAndNotBefore(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, stop, err := Watch(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	defer stop()
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

func TestStopEndsTheWatch(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	exited, stop, err := Watch(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	stop()
	stop()
	select {
	case <-exited:
		t.Fatal("a stopped watch reported an exit")
	case <-time.After(100 * time.Millisecond):
	}
}
