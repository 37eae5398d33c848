package proctree

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/procs"
)

// target is one process to stop and kill, held by a pidfd where there is
// one, so that a signal never reaches another process that took its PID.
type target struct {
	pid int
	fd  int // -1 without a pidfd
}

// open returns a target for p, nil when p is gone (or its PID is another
// process's now).
func open(p procs.Proc) *target {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil && errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		fd = -1
	}
	if q, err := procs.Stat(p.PID); err != nil || q.Start != p.Start || !q.Alive() {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil
	}
	return &target{pid: p.PID, fd: fd}
}

func (t *target) signal(sig syscall.Signal) {
	if t.fd >= 0 {
		unix.PidfdSendSignal(t.fd, sig, nil, 0)
		return
	}
	syscall.Kill(t.pid, sig)
}

// exited reports whether the process has ended (a zombie has).
func (t *target) exited() bool {
	if t.fd < 0 {
		return !procs.Alive(t.pid)
	}
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func (t *target) close() {
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
}
