package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// TestTheSandboxGeneratorOpensNamespacesOnlyWithoutLandlock: the systemd
// generator writes the drop-in that lets the unit make user namespaces for
// bubblewrap when the kernel's LSM list lacks landlock (the Raspberry Pi OS
// kernel), and nothing when it has it or the list cannot be read.
func TestTheSandboxGeneratorOpensNamespacesOnlyWithoutLandlock(t *testing.T) {
	gen := filepath.Join(testbin.ModuleRoot(t), "systemd", "generators", "agenthost-sandbox-generator")
	dropIn := filepath.Join("agenthost.service.d", "50-sandbox-namespaces.conf")
	for _, c := range []struct {
		name, lsm string
		wrote     bool
	}{
		{"with landlock", "lockdown,capability,landlock,yama,apparmor", false},
		{"without landlock", "lockdown,capability,yama,apparmor", true},
		{"a landlock-like name only", "capability,landlockx", true},
		{"unreadable", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lsm := filepath.Join(dir, "lsm")
			if c.lsm != "" {
				os.WriteFile(lsm, []byte(c.lsm+"\n"), 0o644)
			}
			out := filepath.Join(dir, "normal")
			run(t, dir, []string{"AGENTHOST_LSM_FILE=" + lsm}, gen, out, filepath.Join(dir, "early"), filepath.Join(dir, "late"))
			b, err := os.ReadFile(filepath.Join(out, dropIn))
			if (err == nil) != c.wrote {
				t.Fatalf("LSM list %q: drop-in written=%v, want %v", c.lsm, err == nil, c.wrote)
			}
			if c.wrote && (!strings.Contains(string(b), "RestrictNamespaces=user mnt pid") || !strings.Contains(string(b), "SystemCallFilter=mount")) {
				t.Errorf("the drop-in does not allow what bubblewrap needs:\n%s", b)
			}
		})
	}
}
