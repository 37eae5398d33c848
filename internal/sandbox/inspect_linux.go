package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DenyInspection makes the daemon non-dumpable: its /proc entries
// (environ, fd, mem, root, the way into its mount namespace) belong to
// root, and no process of its user may ptrace it, children included.
func DenyInspection() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
