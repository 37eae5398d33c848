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
	return newRawWriter(tc, rc)
}

type rawWriter struct {
	nc *net.TCPConn
	rc syscall.RawConn
	// One write at a time (the connection's write lock): its state lives
	// here and writeFD is bound once, so a write allocates nothing.
	p       []byte
	n       int
	errno   syscall.Errno
	writeFD func(fd uintptr) bool
}

func newRawWriter(nc *net.TCPConn, rc syscall.RawConn) *rawWriter {
	w := &rawWriter{nc: nc, rc: rc}
	w.writeFD = w.write
	return w
}

func (w *rawWriter) Write(p []byte) (int, error) {
	w.p, w.n, w.errno = p, 0, 0
	err := w.rc.Write(w.writeFD)
	n, errno := w.n, w.errno
	w.p = nil
	if err == nil && errno != 0 {
		err = os.NewSyscallError("write", errno)
	}
	if err != nil {
		err = &net.OpError{Op: "write", Net: "tcp", Source: w.nc.LocalAddr(), Addr: w.nc.RemoteAddr(), Err: err}
	}
	return n, err
}

// write is the poller's callback: it writes what is left of w.p, and
// reports false while the socket is full.
func (w *rawWriter) write(fd uintptr) bool {
	for w.n < len(w.p) {
		m, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.p[w.n])), uintptr(len(w.p)-w.n))
		switch e {
		case 0:
			w.n += int(m)
		case unix.EINTR:
		case unix.EAGAIN:
			return false // the poller waits until the socket takes more
		default:
			w.errno = e
			return true
		}
	}
	return true
}
