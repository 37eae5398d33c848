// Package procwait tells when a process has exited without polling: it
// waits on a pidfd (Linux 5.3 and later) through the runtime's poller, so a
// process watched for its whole life costs no wake-up at all.
package procwait

import (
	"errors"
)

// ErrUnsupported is returned where no pidfd can be had; callers fall back
// to polling.
var ErrUnsupported = errors.New("procwait: not supported here")

// Watch returns a channel closed when the process pid exits, and a stop
// function that ends the watch (the channel then stays open). Any process
// may be watched, not only a child; watching does not reap it.
func Watch(pid int) (exited <-chan struct{}, stop func(), err error) {
	f, err := open(pid)
	if err != nil {
		return nil, nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	ch := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		waited := false
		err := rc.Read(func(uintptr) bool {
			done := waited // the first call only asks to wait for readability
			waited = true
			return done
		})
		select {
		case <-stopped:
		default:
			if err == nil {
				close(ch)
			}
		}
	}()
	return ch, func() {
		select {
		case <-stopped:
		default:
			close(stopped)
			f.Close()
		}
	}, nil
}
