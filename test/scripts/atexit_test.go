package scripts

import (
	"bufio"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// TestCtrlCRunsTheCleanupOnce: a script that sets its cleanup with at_exit
// (scripts/at-exit.sh, as scripts/demo.sh does) and is stopped by Ctrl-C, a
// SIGINT to its whole process group as a terminal sends it, or by SIGTERM,
// says its closing line once (found by review: demo.sh's cleanup ran on INT
// and again on EXIT, and printed its closing lines twice).
func TestCtrlCRunsTheCleanupOnce(t *testing.T) {
	need(t, "bash")
	// A test process started with SIGINT ignored (a background job of a
	// shell without job control) would hand that on to bash, which then
	// cannot trap it: with a handler of its own here, the child starts with
	// the default.
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(c)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			body := `set -euo pipefail
source "$1"
sleep 600 >/dev/null &
pid=$!
bye() { kill "$pid" 2>/dev/null || true; echo "closing line"; }
at_exit bye
echo ready
wait "$pid"
echo "not reached"`
			cmd := exec.Command("bash", "-c", body, "demo", script(t, "at-exit.sh"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, as a foreground job's
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				t.Fatalf("the script did not say ready: %q", lines.Text())
			}
			if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
				t.Fatal(err)
			}
			var rest []string
			for lines.Scan() {
				rest = append(rest, lines.Text())
			}
			err = cmd.Wait()
			if n := strings.Count(strings.Join(rest, "\n"), "closing line"); n != 1 {
				t.Errorf("after %v the closing line came %d times, want once; output after ready: %q", sig, n, rest)
			}
			if err == nil {
				t.Errorf("after %v the script exited 0, want a failure status", sig)
			}
		})
	}
}
