package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/procs"
)

var (
	subreaper atomic.Bool
	kick      = make(chan struct{}, 1)
)

// BecomeSubreaper makes this process the child subreaper of everything it
// starts (prctl PR_SET_CHILD_SUBREAPER): an orphaned descendant (a
// daemon's grandchild) is adopted by it instead of by init, so that
// KillDescendants reaches it, and it is reaped here when it ends. For a
// daemon only: it changes what becomes of every orphan under this process.
//
// Only the orphans are reaped here, never a child that os/exec started and
// waits for: such a child has a pidfd open in this process until its Wait
// has reaped it, an adopted one has none. Without working pidfds nothing
// can tell them apart, so this process does not become a subreaper then.
func BecomeSubreaper() error {
	if err := execChildrenHavePidfds(); err != nil {
		return fmt.Errorf("not a subreaper: orphans could not be told from the children os/exec waits for: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	if !subreaper.CompareAndSwap(false, true) {
		return nil
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	go func() {
		for range sig {
			kickReaper()
		}
	}()
	go func() {
		for range kick {
			reapAdopted()
			time.Sleep(20 * time.Millisecond) // a storm of exits costs at most 50 looks a second
		}
	}()
	kickReaper()
	return nil
}

// kickReaper asks for a look for adopted zombies, if this process reaps.
func kickReaper() {
	if !subreaper.Load() {
		return
	}
	select {
	case kick <- struct{}{}:
	default:
	}
}

// reapAdopted reaps this process's zombie children that nothing here waits
// for, and returns how many.
func reapAdopted() int {
	self := os.Getpid()
	var zombies []procs.Proc
	for _, p := range procs.Stats() {
		if p.PPID == self && p.State == 'Z' {
			zombies = append(zombies, p)
		}
	}
	if len(zombies) == 0 {
		return 0
	}
	held := pidfdsHeld()
	n := 0
	for _, z := range zombies {
		if held[z.PID] {
			continue // os/exec's child: its Wait reaps it
		}
		fd, err := unix.PidfdOpen(z.PID, 0)
		if err != nil {
			continue
		}
		// The pidfd is of the zombie seen, not of a process that took its PID since.
		if q, err := procs.Stat(z.PID); err == nil && q.Start == z.Start && q.PPID == self {
			var info unix.Siginfo
			if unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n
}

// pidfdsHeld returns the PIDs of the processes this process holds a pidfd
// of (its fdinfo says "Pid:").
func pidfdsHeld() map[int]bool {
	ents, _ := os.ReadDir("/proc/self/fdinfo")
	held := map[int]bool{}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		_, rest, ok := bytes.Cut(b, []byte("\nPid:\t"))
		if !ok {
			continue
		}
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		if pid, err := strconv.Atoi(string(line)); err == nil && pid > 0 {
			held[pid] = true
		}
	}
	return held
}

// execChildrenHavePidfds checks what reapAdopted relies on: a child that
// os/exec started has a pidfd open in this process until it is waited for.
func execChildrenHavePidfds() error {
	probe, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("no \"true\" to start as a probe: %w", err)
	}
	cmd := exec.Command(probe)
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		return err
	}
	held := pidfdsHeld()[cmd.Process.Pid]
	cmd.Wait()
	if !held {
		return errors.New("a child started by os/exec has no pidfd here (an old kernel, or pidfds are filtered)")
	}
	return nil
}
