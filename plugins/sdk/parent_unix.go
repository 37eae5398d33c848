//go:build unix

package sdk

import (
	"os"
	"time"

	"github.com/agenthost/agenthost/internal/procwait"
)

// watchParent calls gone when the process that started the plugin (the
// host) has exited, which is when the plugin's parent process ID changes:
// the kernel re-parents an orphan to init or to a subreaper. It polls
// getppid every interval.
//
// Why polling getppid: the host cannot always kill its plugins (SIGKILL,
// OOM kill, a crash) and go-plugin has no parent-death detection. The
// plugin's stdin is the host's stdin (go-plugin passes it through; under
// systemd it is /dev/null), so stdin EOF says nothing. prctl(PR_SET_PDEATHSIG)
// set by the plugin would fire when the host's *thread* that forked exits,
// which in a Go host can be any time. A changed parent process ID has no
// false positives (threads exiting in the host keep the process ID) and
// catches every way the host can die; the cost is one cheap syscall per
// interval and up to one interval of delay. Where the kernel has pidfds
// (Linux 5.3+), a pidfd of the host says the same without any polling. The
// host side adds Pdeathsig for an immediate kill.
func watchParent(interval time.Duration, gone func(oldPPID, newPPID int)) {
	ppid := os.Getppid()
	if ppid <= 1 {
		// Already orphaned (or started by init): nothing to watch.
		return
	}
	if exited, err := procwait.Watch(ppid); err == nil {
		go func() { // no wake-ups: a pidfd says when the host has exited
			<-exited
			gone(ppid, os.Getppid())
		}()
		return
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for range t.C {
			if now := os.Getppid(); now != ppid {
				gone(ppid, now)
				return
			}
		}
	}()
}
