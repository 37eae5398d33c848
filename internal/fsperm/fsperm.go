//go:build unix

// Package fsperm says whether a file or folder the host trusts (its runtime
// folder, a plugin folder, a plugin binary) could be changed by a user other
// than the ones allowed to.
package fsperm

import (
	"fmt"
	"os"
	"slices"
	"syscall"
)

// Problem says why fi may be changed by someone other than the users in
// owners: group or others may write it, or another user owns it. "" means
// it is safe. fix is the command to suggest for the mode (e.g. "chmod go-w PATH").
func Problem(fi os.FileInfo, fix string, owners ...int) string {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("has mode %04o: group or others may write to it (%s)", perm, fix)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && !slices.Contains(owners, int(st.Uid)) {
		return fmt.Sprintf("belongs to user id %d, which is neither this user (%d) nor allowed here", st.Uid, os.Getuid())
	}
	return ""
}
