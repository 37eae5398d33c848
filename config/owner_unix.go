//go:build unix

package config

import (
	"fmt"
	"os"
	"syscall"
)

// privateProblem says why the folder fi is not private to this user: group
// or others may write to it, or another user owns it. "" = it is private.
func privateProblem(fi os.FileInfo) string {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("has mode %04o: group or others may write to it (chmod 700 it if it is yours)", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Sprintf("belongs to user id %d, not to this user (%d)", st.Uid, os.Getuid())
	}
	return ""
}

// writable reports whether this user may create files in dir.
func writable(dir string) bool { return syscall.Access(dir, 0x2 /* W_OK */) == nil }
