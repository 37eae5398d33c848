package procwait

import (
	"os"

	"golang.org/x/sys/unix"
)

func open(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, ErrUnsupported
	}
	return os.NewFile(uintptr(fd), "pidfd"), nil
}

// readable reports whether the pidfd fd says its process has exited.
func readable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}
