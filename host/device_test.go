package host

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
)

// TestAStateFolderOfAnotherUserIsRefused: the host does not keep its state
// (the device's mutes and timers, the plugins' data) in a folder that
// another user owns or any user may write to: that user could put their
// own state there. As root, with a folder owned by nobody (65534).
func TestAStateFolderOfAnotherUserIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give a folder to another user")
	}
	for _, tc := range []struct {
		perm  os.FileMode
		owner int
		want  string
	}{{0o700, 65534, "belongs to user id 65534"}, {0o777, 0, "0777"}} {
		cfg := config.Default()
		cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
		os.Chown(cfg.Plugins.StateDir, tc.owner, tc.owner)
		os.Chmod(cfg.Plugins.StateDir, tc.perm)
		_, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), cfg.Plugins.StateDir) {
			t.Errorf("state folder of user %d, mode %04o: err = %v", tc.owner, tc.perm, err)
		}
	}
}
