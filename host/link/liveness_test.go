package link

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// sockopt reads an integer TCP-level (or socket-level) option of nc.
func sockopt(t *testing.T, nc net.Conn, level, opt int) int {
	t.Helper()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// TestTheSocketFailsFastOnADeadPath: with the default settings, written
// data that the server's TCP does not acknowledge for 10 s fails the
// connection (TCP_USER_TIMEOUT), and an idle connection is probed by TCP
// keepalive after 15 s, every 5 s, 3 times.
func TestTheSocketFailsFastOnADeadPath(t *testing.T) {
	f := run(t, voicetest.Options{}, nil)
	f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
	f.link.mu.Lock()
	nc := f.link.cur.nc
	f.link.mu.Unlock()
	for _, o := range []struct {
		name       string
		level, opt int
		want       int
	}{
		{"TCP_USER_TIMEOUT (ms)", unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 10000},
		{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE (s)", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 15},
		{"TCP_KEEPINTVL (s)", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 5},
		{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 3},
	} {
		if got := sockopt(t, nc, o.level, o.opt); got != o.want {
			t.Errorf("%s = %d, want %d", o.name, got, o.want)
		}
	}
}
