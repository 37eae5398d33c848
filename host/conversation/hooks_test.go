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
