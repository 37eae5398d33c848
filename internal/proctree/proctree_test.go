package proctree_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/proctree"
)

// The test binary plays the processes of the tests, by PROCTREE_ROLE:
//
//	parent:       starts an intermediate and a child with an empty environment, then sleeps
//	intermediate: starts a linger in a new session (setsid) and exits at once (a daemon's double fork)
//	linger:       sleeps
//
// PROCTREE_MARK goes on every command line, to find the processes.
func TestMain(m *testing.M) {
	mark := os.Getenv("PROCTREE_MARK")
	switch os.Getenv("PROCTREE_ROLE") {
	case "parent":
		start("intermediate", "intermediate-"+mark, mark, false)
		start("linger", "noenv-"+mark, "", false)
		linger()
	case "intermediate":
		start("linger", "linger-"+mark, mark, true)
		os.Exit(0)
	case "linger":
		linger()
	}
	// This test process is a subreaper, as the daemon is.
	if err := proctree.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func linger() {
	for {
		time.Sleep(time.Hour)
	}
}

// start starts the test binary in role with "mark=<cmdMark>" on its
// command line, in this process's environment with PROCTREE_MARK=envMark,
// or in an environment of its role only when envMark is "", in a new
// session when setsid.
func start(role, cmdMark, envMark string, setsid bool) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "mark="+cmdMark)
	cmd.Env = []string{"PROCTREE_ROLE=" + role}
	if envMark != "" {
		cmd.Env = append(os.Environ(), "PROCTREE_ROLE="+role, "PROCTREE_MARK="+envMark)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := cmd.Start(); err != nil {
		os.Exit(1)
	}
}

// marked lists the live processes whose command line holds mark=<mark>.
func marked(mark string) []procs.Proc { return procs.Find(" mark=" + mark) }

// family starts a parent (in a tree when tree is not nil) and waits for its
// linger grandchild and its child without an environment; it returns the
// parent's command and the three marks: parent, grandchild, child without
// an environment.
func family(t *testing.T, tree *proctree.Tree) (*exec.Cmd, []string) {
	t.Helper()
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^$", "mark=parent-"+mark)
	cmd.Env = append(os.Environ(), "PROCTREE_ROLE=parent", "PROCTREE_MARK="+mark)
	if tree != nil {
		cmd.Env = append(cmd.Env, tree.Env())
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if tree != nil {
		tree.Started(cmd.Process.Pid)
	}
	marks := []string{"parent-" + mark, "linger-" + mark, "noenv-" + mark}
	t.Cleanup(func() {
		for _, m := range marks {
			for _, p := range marked(m) {
				syscall.Kill(p.PID, syscall.SIGKILL)
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if len(marked(marks[1])) == 1 && len(marked(marks[2])) == 1 && len(marked("intermediate-"+mark)) == 0 {
			return cmd, marks
		}
		if time.Now().After(deadline) {
			t.Fatal("the family never started")
		}
	}
}

// TestKillEndsTheWholeTree: a tree's Kill ends its child, the child's
// setsid grandchild (an orphan, in another session) and its child without
// the tag in its environment; a process of another tree goes on.
func TestKillEndsTheWholeTree(t *testing.T) {
	tree, other := proctree.New(), proctree.New()
	cmd, marks := family(t, tree)
	_, otherMarks := family(t, other)
	grandchild := marked(marks[1])[0]
	if grandchild.PPID != os.Getpid() || grandchild.SID == cmd.Process.Pid {
		t.Fatalf("the grandchild %+v is not an orphan adopted here in a session of its own", grandchild)
	}
	if n := tree.Kill(); n != 3 {
		t.Errorf("Kill killed %d processes, want 3", n)
	}
	for _, m := range marks {
		if left := marked(m); len(left) > 0 {
			t.Errorf("%s still runs: %+v", m, left)
		}
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the child's Wait: %v, want killed", err)
	}
	for _, m := range otherMarks {
		if len(marked(m)) != 1 {
			t.Errorf("%s of another tree was killed", m)
		}
	}
	if n := tree.Kill(); n != 0 {
		t.Errorf("a second Kill killed %d", n)
	}
}

// TestOrphansAreAdoptedReapedAndKilledAtExit: in a subreaper, a setsid
// grandchild is adopted, KillDescendants ends every descendant, and the
// adopted ones are reaped (no zombie remains) while the child started with
// os/exec is left to its Wait.
func TestOrphansAreAdoptedReapedAndKilledAtExit(t *testing.T) {
	cmd, marks := family(t, nil)
	grandchild := marked(marks[1])[0]
	if grandchild.PPID != os.Getpid() {
		t.Fatalf("the orphan's parent is %d, not this subreaper %d", grandchild.PPID, os.Getpid())
	}
	if n := proctree.KillDescendants(); n != 3 {
		t.Errorf("KillDescendants killed %d processes, want 3", n)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := procs.Stat(grandchild.PID); err != nil {
			break // reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed orphan %d was never reaped", grandchild.PID)
		}
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the child's Wait: %v, want killed (not reaped by someone else)", err)
	}
}

// TestWaitStillGetsItsChildsStatus: while the reaper looks for zombies all
// the time, every child started with os/exec is left to its own Wait,
// which gets its exit status.
func TestWaitStillGetsItsChildsStatus(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				syscall.Kill(os.Getpid(), syscall.SIGCHLD) // a look for zombies
				time.Sleep(time.Millisecond)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := range 20 {
		cmd := exec.Command("sh", "-c", "exit 3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A zombie for a while before Wait: the reaper looks at it a few times.
		for p, err := procs.Stat(cmd.Process.Pid); err == nil && p.State != 'Z'; p, err = procs.Stat(cmd.Process.Pid) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
			t.Fatalf("child %d: %v, state %v; want exit status 3", i, err, cmd.ProcessState)
		}
	}
}
