package scripts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// TestTheDemoReadsLikeAStory runs scripts/demo.sh as a person does (the
// plain run: a spoken question from a file, in a loop, as the microphone)
// for a few seconds of voice turns after its text turn, ends it with Ctrl-C
// (SIGINT to its process group), and reads what it printed: the host's
// "agenthost stopped" (its log not cut by the Ctrl-C), no line per audio
// frame, no server status left in Chinese, no WARN or ERROR (the host
// stops before the simulator), and the text turn's reply complete: its end
// reached the host (the looping microphone did not cut it). The
// simulator's port is chosen, so that the demo runs beside another.
func TestTheDemoReadsLikeAStory(t *testing.T) {
	need(t, "bash", "espeak-ng", "sox")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script(t, "demo.sh"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := new(testbin.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A person's Ctrl-C, to the whole foreground group, a few seconds of
	// voice turns after the text turn.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for !strings.Contains(out.String(), "== voice turns") {
		select {
		case err := <-done:
			t.Fatalf("the demo ended (%v) before its voice turns:\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	time.Sleep(10 * time.Second)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	err := <-done
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 130) {
		t.Fatalf("demo.sh after Ctrl-C: %v, want exit 130\n%s", err, out.String())
	}
	text := out.String()
	var frames, warns, chinese []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(line, `frame="AUDIO`):
			frames = append(frames, line)
		case strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR"):
			warns = append(warns, line)
		case regexp.MustCompile(`\p{Han}`).MatchString(line):
			chinese = append(chinese, line)
		}
	}
	if len(frames) > 0 {
		t.Errorf("%d lines of audio frames, the first: %s", len(frames), frames[0])
	}
	for _, l := range warns {
		t.Errorf("a warning or an error in a clean run: %s", l)
	}
	for _, l := range chinese {
		t.Errorf("a line not in the user's words: %s", l)
	}
	// `say` waits for the text turn's reply and prints it with what the
	// server called; a reply the microphone's turn cut off it says so.
	if !strings.Contains(text, "called: get_current_time") {
		t.Fatalf("no text turn's reply (no \"called: get_current_time\" from say):\n%s", text)
	}
	if strings.Contains(text, "the reply was cut off") {
		t.Errorf("the text turn's reply was cut by the microphone")
	}
	if !strings.Contains(text, `msg="reply ended" component=conversation`) {
		t.Errorf("no reply ended in the host's log")
	}
	// Ctrl-C stopped the host, which said so (its log was not cut on the way).
	if !strings.Contains(text, `msg="agenthost stopped"`) {
		t.Errorf("the host did not say it stopped after Ctrl-C")
	}
	if strings.Contains(text, "127.0.0.1:8009") {
		t.Errorf("the simulator listens on the fixed port 8009, not one chosen")
	}
	if t.Failed() {
		t.Logf("the demo's output:\n%s", text)
	}
}

// TestTheDemoWaitsForItsSimulatorsLog: the demo reads the simulator's port
// from run/voicesim.out, which a tee behind a process substitution writes;
// on a busy machine that tee starts late. The late start is provoked with a
// fake tee (named as such: a shim on PATH that sleeps, then runs the real
// one). Found by CI: the demo's sed found no file, exited 2, and set -e
// ended the demo before its first turn.
func TestTheDemoWaitsForItsSimulatorsLog(t *testing.T) {
	need(t, "bash", "espeak-ng", "sox", "tee")
	realTee, _ := exec.LookPath("tee")
	shims := t.TempDir()
	shim := "#!/bin/sh\n# a fake tee that starts late\nsleep 1\nexec " + realTee + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shims, "tee"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script(t, "demo.sh"), "--audio", "none")
	cmd.Env = append(os.Environ(), "PATH="+shims+":"+os.Getenv("PATH"), "DEMO_SECONDS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh with a late tee: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "== the host is up") {
		t.Errorf("the demo did not reach its host:\n%s", out)
	}
}
