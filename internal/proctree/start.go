package proctree

import (
	"os/exec"
	"runtime"
)

// StartLocked starts cmd from a goroutine locked to its OS thread for the
// life of the process. Pdeathsig fires when the forking thread ends, and Go
// retires a thread whose locked goroutine ends: so the child is signalled
// when this process dies, never because some other code's thread went away.
// started (if not nil) runs after the start and before the wait; exited gets
// Wait's error. The error is Start's.
func StartLocked(cmd *exec.Cmd, started func(pid int), exited func(error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the process
		if err := cmd.Start(); err != nil {
			errc <- err
			return
		}
		if started != nil {
			started(cmd.Process.Pid)
		}
		errc <- nil
		exited(cmd.Wait())
	}()
	return <-errc
}
