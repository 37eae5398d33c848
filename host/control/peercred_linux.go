//go:build linux

package control

import (
	"errors"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5): a pidfd of the process that
// connected, which tells whether that very process still runs.
const soPeerPidfd = 77

// identify reads who is on the other end of c (at accept) and decides.
func identify(c net.Conn, d daemon) Verdict {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return Verdict{Why: "the connection is not a unix socket's"}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return Verdict{Why: "reading the connection: " + err.Error()}
	}
	var cred *unix.Ucred
	var credErr, pidfdErr error
	pidfd := -1
	err = raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		pidfd, pidfdErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPidfd)
	})
	accepted := bootTicks()
	if err == nil {
		err = credErr
	}
	if err != nil {
		return Verdict{Why: "the kernel did not say who is calling (SO_PEERCRED): " + err.Error()}
	}
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid), Accepted: accepted}
	switch {
	case pidfdErr == nil:
		defer unix.Close(pidfd)
	case !errors.Is(pidfdErr, unix.ENOPROTOOPT): // an older kernel has none
		return Verdict{Peer: p, Why: "its process is gone (SO_PEERPIDFD: " + pidfdErr.Error() + ")"}
	}
	v := decide(p, d)
	if v.Allowed && pidfdErr == nil && exited(pidfd) {
		v.Allowed, v.Why = false, "its process has ended"
	}
	return v
}

// bootTicks is the time since boot in clock ticks (USER_HZ, 100 a second
// on every Linux), as /proc gives a process's start.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0 // every peer then started after: refused
	}
	return uint64(ts.Nano()) / 10_000_000
}

// exited reports whether the process of pidfd has ended.
func exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0
}

// isSubreaper reports whether this process adopts its descendants' orphans.
func isSubreaper() bool {
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
}
