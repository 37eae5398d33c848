package conversation

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// TestHooksThatLeaveChildrenDoNotBlockLaterHooks: a hook whose shell leaves a
// background child behind (which keeps the output pipe open) must not hold
// its slot: after more such hooks than there are slots, a later hook still
// runs, and nothing a hook started outlives it.
func TestHooksThatLeaveChildrenDoNotBlockLaterHooks(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	log := &testbin.Buffer{}
	h := newHooks(map[string]string{
		"emoji": "sleep 31.4159 &",
		"text":  "touch " + marker,
	}, slog.New(slog.NewTextHandler(log, nil)))
	for range maxHooks + 1 {
		h.run("emoji", nil)
	}
	eventually(t, "a later hook to run", func() bool {
		h.run("text", nil)
		_, err := os.Stat(marker)
		return err == nil
	})
	eventually(t, "the hooks' background children to end", func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 31.4159").Output()
		return strings.TrimSpace(string(out)) == ""
	})
}

// TestAHookPastItsTimeoutIsKilledWithItsChildren: a hook that runs too long
// is killed at its timeout together with what it started, and says so.
func TestAHookPastItsTimeoutIsKilledWithItsChildren(t *testing.T) {
	log := &testbin.Buffer{}
	h := newHooks(map[string]string{"emoji": "sleep 27.1828 & sleep 27.1828"}, slog.New(slog.NewTextHandler(log, nil)))
	h.timeout = 200 * time.Millisecond
	h.run("emoji", nil)
	eventually(t, "the timeout to be reported", func() bool { return strings.Contains(log.String(), "ran past its timeout") })
	eventually(t, "the hook's processes to end", func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 27.1828").Output()
		return strings.TrimSpace(string(out)) == ""
	})
}

// heldHook is a hook command that appends its event and AGENTHOST_MUTED to
// log, then waits until release exists.
func heldHook(log, release string) string {
	return `echo "$AGENTHOST_EVENT $AGENTHOST_MUTED" >> ` + log + `; while [ ! -e ` + release + ` ]; do sleep 0.02; done`
}

func hookLines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestTheOwnersCuesRunWhileTheServersHooksHoldTheSlots: hooks of the
// server's frames that keep running take at most two slots; the owner's
// cues (mute, wake, listen_start, listen_stop, turn_failed) and the other
// events (a timer) still run.
func TestTheOwnersCuesRunWhileTheServersHooksHoldTheSlots(t *testing.T) {
	dir := t.TempDir()
	release, held, ran := filepath.Join(dir, "release"), filepath.Join(dir, "held"), filepath.Join(dir, "ran")
	logged := `echo "$AGENTHOST_EVENT" >> ` + ran
	h := newHooks(map[string]string{
		"emoji": heldHook(held, release), "text": heldHook(held, release), "speak": heldHook(held, release), "turn_end": heldHook(held, release),
		"mute": logged, "wake": logged, "listen_start": logged, "listen_stop": logged, "turn_failed": logged, "timer": logged,
	}, slog.New(slog.NewTextHandler(&testbin.Buffer{}, nil)))
	t.Cleanup(func() { os.WriteFile(release, nil, 0o600); h.wait() })
	for _, e := range []string{"emoji", "text", "speak", "turn_end", "emoji", "emoji"} {
		h.run(e, nil)
	}
	eventually(t, "the server's hooks to hold their slots", func() bool { return len(hookLines(held)) >= 2 })
	want := []string{"mute", "wake", "listen_start", "listen_stop", "turn_failed", "timer"}
	for _, e := range want {
		h.run(e, map[string]string{"DEVICE": "microphone", "MUTED": "true"})
	}
	eventually(t, "every cue to run", func() bool { return len(hookLines(ran)) == len(want) })
	if n := len(hookLines(held)); n != 2 {
		t.Errorf("%d hooks of the server's frames ran at once, want 2", n)
	}
}

// TestAStateHookThatMustWaitIsNotLost: a mute hook still running when the
// state changes again and again runs once more, with the latest state; the
// states in between are skipped, and none runs beside another.
func TestAStateHookThatMustWaitIsNotLost(t *testing.T) {
	dir := t.TempDir()
	release, log := filepath.Join(dir, "release"), filepath.Join(dir, "mute.log")
	h := newHooks(map[string]string{"mute": heldHook(log, release)}, slog.New(slog.NewTextHandler(&testbin.Buffer{}, nil)))
	t.Cleanup(func() { os.WriteFile(release, nil, 0o600); h.wait() })
	mute := func(state string) { h.run("mute", map[string]string{"DEVICE": "microphone", "MUTED": state}) }
	mute("true")
	eventually(t, "the first mute hook to run", func() bool { return len(hookLines(log)) == 1 })
	mute("false")
	mute("true")
	mute("false")
	if n := len(hookLines(log)); n != 1 {
		t.Fatalf("%d mute hooks ran beside each other: %q", n, hookLines(log))
	}
	os.WriteFile(release, nil, 0o600)
	eventually(t, "the latest state's hook to run", func() bool { return len(hookLines(log)) >= 2 })
	mute("last") // runs after whatever was still queued
	eventually(t, "the last hook to run", func() bool { return len(hookLines(log)) >= 3 })
	if got := strings.Join(hookLines(log), ","); got != "mute true,mute false,mute last" {
		t.Fatalf("the mute hook ran for %q, want the first state, the latest, then the last", got)
	}
}
