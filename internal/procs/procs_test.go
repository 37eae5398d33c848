package procs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
)

// TestAChildIsSeenUntilItIsReaped starts a real child from a copy of sleep
// in a folder of its own and follows it: found with its parent, name,
// arguments and folder; a zombie once killed; gone once reaped.
func TestAChildIsSeenUntilItIsReaped(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "nap (1)") // a space and a parenthesis in comm
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	in := procs.In(dir)
	if len(in) != 1 || in[0].PID != pid {
		t.Fatalf("In(%s) = %+v, want only pid %d", dir, in, pid)
	}
	p := in[0]
	if p.PPID != os.Getpid() || p.Comm != "nap (1)" || p.Exe != exe || p.Cmdline != exe+" 30" || p.UID != os.Getuid() {
		t.Fatalf("read %+v, want parent %d, comm %q, exe %q, uid %d", p, os.Getpid(), "nap (1)", exe, os.Getuid())
	}
	if !procs.Alive(pid) || procs.Gone(pid, 0) {
		t.Fatal("a running child is not alive")
	}
	if found := procs.Find(exe, " 30"); len(found) != 1 || found[0].PID != pid {
		t.Fatalf("Find(%s, 30) = %+v, want only pid %d", exe, found, pid)
	}
	if m, err := procs.Memory(pid); err != nil || m.RSS <= 0 || m.Anon <= 0 || m.Anon > m.RSS || m.Peak < m.RSS {
		t.Fatalf("Memory = %+v, %v", m, err)
	}

	// Killed and not yet reaped: a zombie, not alive, not In the folder.
	cmd.Process.Signal(syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if q, err := procs.Read(pid); err == nil && q.State == 'Z' {
			break
		}
	}
	if q, err := procs.Read(pid); err != nil || q.State != 'Z' {
		t.Fatalf("killed child: %+v, %v; want a zombie", q, err)
	}
	if procs.Alive(pid) || !procs.Gone(pid, 0) || len(procs.In(dir)) != 0 || len(procs.Find(exe)) != 0 {
		t.Fatal("a zombie counts as alive")
	}
	cmd.Wait()
	if _, err := procs.Read(pid); err == nil {
		t.Fatal("a reaped child can still be read")
	}
}

// TestAllListsThisProcess: the test binary itself is in the list.
func TestAllListsThisProcess(t *testing.T) {
	self, _ := os.Executable()
	for _, p := range procs.All() {
		if p.PID == os.Getpid() {
			if p.Exe != self || !p.Alive() {
				t.Fatalf("self = %+v, want exe %s, alive", p, self)
			}
			return
		}
	}
	t.Fatal("this process is not listed")
}

// TestStatAndEnviron: a child's stat line gives its group, session and
// start, and its environment is the one it was given.
func TestStatAndEnviron(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "30")
	cmd.Env = []string{"PROCS_TEST=marked"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	p, err := procs.Stat(pid)
	if err != nil || p.PPID != os.Getpid() || p.PGID != pid || p.SID != pid || p.Start == 0 || p.Comm != "sleep" {
		t.Fatalf("Stat = %+v, %v; want parent %d, group and session %d, a start", p, err, os.Getpid(), pid)
	}
	self, err := procs.Stat(os.Getpid())
	if err != nil || self.Start > p.Start {
		t.Fatalf("this process (%+v, %v) started after its child (%d)", self, err, p.Start)
	}
	// The parent may learn that exec succeeded (its close-on-exec pipe
	// closes) before the kernel has set up the new image's environment:
	// until then environ reads empty.
	var env []byte
	for range 1000 {
		if env, err = procs.Environ(pid); err != nil || len(env) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil || string(env) != "PROCS_TEST=marked\x00" {
		t.Fatalf("Environ = %q, %v", env, err)
	}
	found := false
	for _, q := range procs.Stats() {
		found = found || q.PID == p.PID && q.Start == p.Start && q.SID == p.SID
	}
	if !found {
		t.Fatalf("Stats does not list %+v", p)
	}
}
