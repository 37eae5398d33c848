// Package procs reads the processes of this Linux machine from /proc: which
// run, from which executable, in which state, and how much memory they hold.
// `agenthost check`, the tests, the benchmarks and the soak harness use it to
// find processes and to prove none was left behind; procwait polls with it
// where a pidfd cannot tell when a process ends.
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
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return Proc{}, err
	}
	// pid (comm) state ppid …: comm may hold spaces and ')', so the fields
	// are those after the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 {
		return Proc{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	p := Proc{PID: pid, Comm: string(b[open+1 : end]), State: f[0][0], UID: -1}
	p.PPID, _ = strconv.Atoi(f[1])
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

// All lists every process that can be read, by PID.
func All() []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Read(pid); err == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Alive reports whether pid runs and is not a zombie.
func Alive(pid int) bool {
	p, err := Read(pid)
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
