package wakeword

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestADetectorsLastWordsAreRead: a detector that writes its error line
// and exits at once (a library that cannot be loaded) is reported by that
// line, every time. Found by a full run: the host read stdout from
// StdoutPipe, which Wait closes as soon as the child exits, so the line
// was now and then lost ("read |0: file already closed"). The detector
// here is a stand-in (a shell script): the fault is its timing, which the
// real one meets only now and then.
func TestADetectorsLastWordsAreRead(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "detector")
	script := "#!/bin/sh\necho '{\"type\":\"error\",\"error\":\"cannot load /nonexistent/lib.so\"}'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := start(ctx, sandbox.Jail{}, Settings{}, bin, nil, slog.New(slog.DiscardHandler), nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/lib.so") {
			lost++
			t.Logf("start: %v", err)
		}
	}
	if lost > 0 {
		t.Errorf("the detector's error line was lost %d times in 200", lost)
	}
}

// TestAStrayHoldingStdoutDoesNotHoldTheReader: a detector that leaves a
// process outside its group holding its stdout (here a setsid sleep) and
// exits does not keep the host reading that stdout for ever: the reader
// ends soon after the exit, without calling it a broken protocol. (With
// StdoutPipe, Wait's WaitDelay closed it; with the host's own pipe, nothing
// did.)
func TestAStrayHoldingStdoutDoesNotHoldTheReader(t *testing.T) {
	dir := t.TempDir()
	bin, pidFile := filepath.Join(dir, "detector"), filepath.Join(dir, "stray.pid")
	script := "#!/bin/sh\necho '{\"type\":\"ready\"}'\nsetsid sleep 300 &\necho $! >" + pidFile + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	before := goleak.IgnoreCurrent()
	logs := &logBuf{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	c, err := start(ctx, sandbox.Jail{}, Settings{}, bin, nil, slog.New(slog.NewTextHandler(logs, nil)), nil)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the detector's exit was not noticed")
	}
	waitFor(t, "the reader to end", func() bool { return goleak.Find(before) == nil })
	if strings.Contains(logs.String(), "broke its protocol") {
		t.Errorf("the end of the reader was taken for a broken protocol:\n%s", logs)
	}
}
