// Package procs reads the processes of this Linux machine from /proc: which
// run, from which executable, in which state, and how much memory they hold.
// `agenthost check`, the tests, the benchmarks and the soak harness use it to
// find processes and to prove none was left behind; procwait polls with it
// where a pidfd cannot tell when a process ends; proctree finds a child's
// descendants with it.
package procs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is one process as /proc shows it.
type Proc struct {
	PID, PPID int
	PGID, SID int    // its process group and session
	Start     uint64 // when it started, in clock ticks since boot: a PID with another Start is another process
	Comm      string // the short name (/proc/<pid>/comm)
	State     byte   // R, S, D, Z, X…
	UID       int    // the owner of /proc/<pid>, -1 when unknown
	Exe       string // the executable's path ("… (deleted)" once replaced), "" when unreadable
	Cmdline   string // the arguments joined by spaces
}

// Alive reports whether the process still runs: a zombie waiting for its
// parent does not.
func (p Proc) Alive() bool { return p.State != 'Z' && p.State != 'X' }

// Read reads one process.
func Read(pid int) (Proc, error) {
	p, err := Stat(pid)
	if err != nil {
		return Proc{}, err
	}
	dir := "/proc/" + strconv.Itoa(pid)
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			p.UID = int(st.Uid)
		}
	}
	p.Exe, _ = os.Readlink(dir + "/exe")
	if c, err := os.ReadFile(dir + "/cmdline"); err == nil {
		p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(c), "\x00", " "))
	}
	return p, nil
}

// Stat reads one process's stat line only: PID, PPID, PGID, SID, Start,
// Comm and State (UID is -1, Exe and Cmdline empty).
func Stat(pid int) (Proc, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return Proc{}, err
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime …: comm may hold spaces and ')', so the fields
	// are those after the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("%s: unexpected format", path)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return Proc{}, fmt.Errorf("%s: unexpected format", path)
	}
	p := Proc{PID: pid, Comm: string(b[open+1 : end]), State: f[0][0], UID: -1}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGID, _ = strconv.Atoi(f[2])
	p.SID, _ = strconv.Atoi(f[3])
	p.Start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, nil
}

// Stats lists every process by Stat, by PID: cheaper than All.
func Stats() []Proc {
	var out []Proc
	for _, pid := range pids() {
		if p, err := Stat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Environ returns a process's environment as it was given to it, entries
// separated by NUL bytes. Only processes of this process's user can be read.
func Environ(pid int) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
}

// pids lists the PIDs in /proc, in order.
func pids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// All lists every process that can be read, by PID.
func All() []Proc {
	var out []Proc
	for _, pid := range pids() {
		if p, err := Read(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Alive reports whether pid runs and is not a zombie.
func Alive(pid int) bool {
	p, err := Stat(pid)
	return err == nil && p.Alive()
}

// Gone waits up to within for pid to end (a zombie counts as ended) and
// reports whether it did.
func Gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Find lists the live processes whose command line holds every one of parts.
func Find(parts ...string) []Proc {
	var out []Proc
	for _, p := range All() {
		all := p.Alive()
		for _, part := range parts {
			all = all && strings.Contains(p.Cmdline, part)
		}
		if all {
			out = append(out, p)
		}
	}
	return out
}

// In lists the live processes whose executable is (or was, before a rename
// replaced it) in dir.
func In(dir string) []Proc {
	dir = filepath.Clean(dir) + "/"
	var out []Proc
	for _, p := range All() {
		if p.Alive() && strings.HasPrefix(p.Exe, dir) {
			out = append(out, p)
		}
	}
	return out
}

// Mem is a process's resident memory, in bytes.
type Mem struct {
	RSS  int64 // VmRSS: all resident pages
	Anon int64 // RssAnon: the heap, stacks and other anonymous pages
	Peak int64 // VmHWM: the most VmRSS has been
}

// Memory reads a process's resident memory from /proc/<pid>/status.
func Memory(pid int) (Mem, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Mem{}, err
	}
	var m Mem
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "RssAnon:":
			m.Anon = kb << 10
		case "VmHWM:":
			m.Peak = kb << 10
		}
	}
	return m, nil
}
