package link

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketWriter is what the link's encoder writes to: for a plain TCP
// connection, the socket written with raw system calls. The socket is
// non-blocking, so a raw write does not block; a full socket waits in the
// poller, under the connection's write deadline, like net.Conn's Write.
// What it saves: a write through the syscall package wakes the runtime's
// monitor thread when it sleeps (as it does between two frames of a
// stream), which then polls every 20 µs while the frame is handled, for
// every frame sent.
func socketWriter(nc net.Conn) io.Writer {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc // TLS, or a test's pipe
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	return &rawWriter{nc: tc, rc: rc}
}

type rawWriter struct {
	nc *net.TCPConn
	rc syscall.RawConn
}

func (w *rawWriter) Write(p []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	err := w.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(m)
			case unix.EINTR:
			case unix.EAGAIN:
				return false // the poller waits until the socket takes more
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("write", errno)
	}
	if err != nil {
		err = &net.OpError{Op: "write", Net: "tcp", Source: w.nc.LocalAddr(), Addr: w.nc.RemoteAddr(), Err: err}
	}
	return n, err
}
