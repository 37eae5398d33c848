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
