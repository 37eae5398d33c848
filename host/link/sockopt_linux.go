package link

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// userTimeout returns a Dialer.Control that sets TCP_USER_TIMEOUT: written
// data the peer leaves unacknowledged for d fails the connection (and a
// keepalive probe unanswered that long). 0 keeps the system's default.
func userTimeout(d time.Duration) func(network, address string, rc syscall.RawConn) error {
	if d <= 0 {
		return nil
	}
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return serr
	}
}
