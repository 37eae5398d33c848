// Package proctree ends a supervised child together with every process it
// started, also one that left its process group, its session and its
// parent (a daemon's double fork under setsid), which a process-group kill
// misses. Each child is started with a tag in its environment, which its
// descendants inherit: a Tree finds the child's processes by that tag and by
// ancestry, stops them all (SIGSTOP, so none forks any more), then kills
// them. A daemon that calls BecomeSubreaper adopts the orphans of its
// descendants instead of init, reaps them, and kills those left at its exit
// (KillDescendants), whatever their environment.
//
// Under systemd a cgroup per child would make this exact; the unit's
// KillMode=control-group already ends every descendant with the service.
package proctree

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
)

// EnvName is the environment variable that carries a tree's tag
// (config.EnvProcessTree, which configuration loading ignores).
const EnvName = "AGENTHOST_TREE"

// Tree is the processes of one supervised child.
type Tree struct {
	id      string
	killing sync.Mutex // one Kill at a time: a second one finds what the first left

	mu    sync.Mutex
	root  int    // the child's PID, 0 before Started
	start uint64 // its start time (procs.Proc.Start)
}

var seq atomic.Uint64

// New returns a tree with a tag of its own.
func New() *Tree {
	var b [6]byte
	rand.Read(b[:])
	return &Tree{id: fmt.Sprintf("%d.%d.%x", os.Getpid(), seq.Add(1), b)}
}

// Env is the entry to add to the child's environment.
func (t *Tree) Env() string { return EnvName + "=" + t.id }

// Started records the child's PID once it runs: its descendants that cleared
// their environment are still found while they descend from it.
func (t *Tree) Started(pid int) {
	p, err := procs.Stat(pid)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.root = pid
	if err == nil {
		t.start = p.Start
	}
}

// Kill ends every process of the tree that still runs, the child itself
// included, and returns how many it killed once they are dead (or after a
// few seconds, for one stuck in the kernel). It may be called more than
// once.
func (t *Tree) Kill() int {
	t.killing.Lock()
	defer t.killing.Unlock()
	t.mu.Lock()
	root, start := t.root, t.start
	t.mu.Unlock()
	tag := []byte("\x00" + t.Env() + "\x00")
	return kill(func(all []procs.Proc) []procs.Proc { return members(all, root, start, tag) }, 0)
}

// KillDescendants kills every process under this one, for a daemon's exit:
// after BecomeSubreaper, that is every process its children left behind.
func KillDescendants() int {
	self := os.Getpid()
	st, err := procs.Stat(self)
	if err != nil {
		return 0
	}
	return kill(func(all []procs.Proc) []procs.Proc { return members(all, self, st.Start, nil) }, self)
}

// members returns the live processes of all that belong to the tree of
// root (which started at start): root itself, those whose environment
// holds tag (nil: none), and the descendants of any of them. Every member
// started no earlier than root.
func members(all []procs.Proc, root int, start uint64, tag []byte) []procs.Proc {
	byPID := make(map[int]procs.Proc, len(all))
	for _, p := range all {
		byPID[p.PID] = p
	}
	in, out := map[int]bool{}, map[int]bool{}
	if r, ok := byPID[root]; ok && root > 0 && r.Start == start {
		in[root] = true
	}
	for _, p := range all {
		if tag != nil && p.Start >= start && !in[p.PID] && tagged(p.PID, tag) {
			in[p.PID] = true
		}
	}
	// A process belongs when one of its ancestors does.
	for _, p := range all {
		var path []int
		for q, ok := p, true; ; q, ok = byPID[q.PPID] {
			if ok && in[q.PID] {
				for _, pid := range path {
					in[pid] = true
				}
				break
			}
			if !ok || out[q.PID] || q.Start < start || q.PID <= 1 || len(path) > len(all) {
				for _, pid := range path {
					out[pid] = true
				}
				break
			}
			path = append(path, q.PID)
		}
	}
	var live []procs.Proc
	for _, p := range all {
		if in[p.PID] && p.Alive() {
			live = append(live, p)
		}
	}
	return live
}

// tagged reports whether the environment process pid started with holds
// tag ("\x00NAME=value\x00").
func tagged(pid int, tag []byte) bool {
	env, err := procs.Environ(pid)
	if err != nil || len(env) == 0 {
		return false
	}
	env = append(append([]byte{0}, env...), 0)
	return bytes.Contains(env, tag)
}

// maxRounds bounds the looks for processes forked while the tree is being
// stopped; each look stops all it finds, which then fork no more.
const maxRounds = 50

// killWait bounds the wait for the killed processes to die.
const killWait = 5 * time.Second

// kill stops every process find returns, looking again until a look finds
// none that is not stopped yet, then kills them all and waits for them to
// die. Process except is spared (this one).
func kill(find func([]procs.Proc) []procs.Proc, except int) int {
	held := map[int]*target{}
	defer func() {
		for _, h := range held {
			h.close()
		}
	}()
	for range maxRounds {
		fresh := 0
		for _, p := range find(procs.Stats()) {
			if p.PID == except || held[p.PID] != nil {
				continue
			}
			h := open(p)
			if h == nil {
				continue // gone already
			}
			held[p.PID] = h
			h.signal(syscall.SIGSTOP)
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	for _, h := range held {
		h.signal(syscall.SIGKILL)
	}
	deadline := time.Now().Add(killWait)
	for _, h := range held {
		for !h.exited() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(held) > 0 {
		kickReaper()
	}
	return len(held)
}
