// Package procwait tells when a process has exited without polling: it
// waits on a pidfd (Linux 5.3 and later) through the runtime's poller, so a
// process watched for its whole life costs no wake-up at all.
package procwait

import (
	"errors"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
)

// ErrUnsupported is returned where no pidfd can be had; callers fall back
// to polling.
var ErrUnsupported = errors.New("procwait: not supported here")

// Watch returns a channel closed when the process pid exits. Any process
// may be watched, not only a child; watching does not reap it. The pidfd is
// closed once the exit is seen; should the poller fail, the watch goes on
// by polling.
func Watch(pid int) (exited <-chan struct{}, err error) {
	f, err := open(pid)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		// Each look asks the pidfd itself: the poller forgets a readiness
		// that came before the first wait, so an exit right after open
		// would otherwise never be seen.
		err := rc.Read(readable)
		f.Close()
		if err != nil {
			for procs.Alive(pid) {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return ch, nil
}
