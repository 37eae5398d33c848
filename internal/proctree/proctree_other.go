//go:build !linux

package proctree

import (
	"errors"
	"syscall"

	"github.com/agenthost/agenthost/internal/procs"
)

type target struct{ pid int }

func open(p procs.Proc) *target             { return &target{p.PID} }
func (t *target) signal(sig syscall.Signal) { syscall.Kill(t.pid, sig) }
func (t *target) exited() bool              { return !procs.Alive(t.pid) }
func (t *target) close()                    {}
func kickReaper()                           {}

// BecomeSubreaper is Linux only.
func BecomeSubreaper() error { return errors.New("a child subreaper is Linux only") }
