//go:build linux

package audio

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerFD is a pacer's sleep on a timerfd that the runtime's poller
// watches, armed and read with raw system calls. A paced stream sleeps
// every frame; on a Go timer each of those sleeps wakes the poller twice
// (its epoll timeout is in whole milliseconds, so it wakes early and waits
// again) and wakes the runtime's monitor thread, which then polls every
// 20 µs while the frame is handled and preempts it on a stale clock. A
// timerfd wakes the poller once, to the nanosecond; raw calls (they do not
// block: the fd is non-blocking) do not wake the monitor.
//
// A stream in a testing/synctest bubble, whose clock is not the system's
// (it starts in 2000), waits on a Go timer instead, which that clock drives.
type timerFD struct {
	once     sync.Once
	f        *os.File
	rc       syscall.RawConn
	err      error
	fallback goTimer
	// One sleep at a time (its stream's gate): its state lives here and
	// wait is bound once, so a sleep allocates nothing.
	spec  unix.ItimerSpec
	buf   [8]byte // the number of expirations
	errno syscall.Errno
	armed bool
	wait  func(fd uintptr) bool
}

func newSleeper() sleeper { return &timerFD{} }

func (t *timerFD) open() {
	var ts unix.Timespec
	unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_REALTIME, uintptr(unsafe.Pointer(&ts)), 0)
	if skew := time.Since(time.Unix(ts.Unix())); skew > time.Hour || skew < -time.Hour {
		t.err = errors.New("not the system's clock")
		return
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		t.err = err
		return
	}
	t.f = os.NewFile(uintptr(fd), "timerfd")
	t.wait = t.armOrRead
	if t.rc, t.err = t.f.SyscallConn(); t.err != nil {
		t.f.Close()
	}
}

// sleep waits d (> 0), or until close; the first sleep opens the timer,
// and a timer that cannot be opened or armed falls back to a Go timer.
func (t *timerFD) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.once.Do(t.open)
	if t.err != nil {
		return t.fallback.sleep(ctx, d)
	}
	t.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	t.armed, t.errno = false, 0
	err := t.rc.Read(t.wait)
	if !t.armed || t.errno != 0 { // closed, or not armed
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return t.fallback.sleep(ctx, d)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// armOrRead is the poller's callback. The timer is armed inside the
// poller's read (after it forgot any earlier readiness), so the first call
// need not try a read that cannot succeed yet: an expiry from then on wakes
// the wait.
func (t *timerFD) armOrRead(fd uintptr) bool {
	if !t.armed {
		t.armed = true
		_, _, t.errno = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
		return t.errno != 0
	}
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)))
	return e != unix.EAGAIN && e != unix.EINTR
}

// close ends a pending sleep (its caller's ctx is done by then) and
// releases the timer.
func (t *timerFD) close() {
	t.once.Do(func() { t.err = os.ErrClosed })
	if t.f != nil {
		t.f.Close()
	}
}
