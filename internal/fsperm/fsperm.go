//go:build unix

// Package fsperm says whether a file or folder the host trusts (its runtime
// folder, a plugin folder, a plugin binary, the daemon's socket) could be
// changed by a user other than the ones allowed to.
package fsperm

import (
	"fmt"
	"os"
	"path/filepath"
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

// DirProblem says why fi, a folder the host puts its sockets or state in,
// could be used by another user to take their place: a user other than
// this one or root owns it, or others (beyond its owner and group) may
// write to it. Its group may write (systemd's RuntimeDirectoryMode= may
// share the folder with the service's group). "" means it is safe.
func DirProblem(fi os.FileInfo) string {
	if perm := fi.Mode().Perm(); perm&0o002 != 0 {
		return fmt.Sprintf("has mode %04o: any user may write to it and put their own socket or file in the host's place (chmod o-w it)", perm)
	}
	if uid, ok := Owner(fi); ok && uid != os.Getuid() && uid != 0 {
		return fmt.Sprintf("belongs to user id %d, which is neither this user (%d) nor root: that user could put their own socket or file in the host's place", uid, os.Getuid())
	}
	return ""
}

// SocketProblem says why the socket at path may not be the daemon's: its
// folder lets any user replace it (others may write there, without the
// sticky bit), it is not a socket, or it belongs to a user other than
// this one, root and its folder's owner. "" means it may be spoken to; a
// path that does not exist is left for the dial to report.
func SocketProblem(path string) string {
	dir := filepath.Dir(path)
	dfi, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	if perm := dfi.Mode(); perm.Perm()&0o002 != 0 && perm&os.ModeSticky == 0 {
		return fmt.Sprintf("its folder %s has mode %04o: any user may have put their own socket there", dir, perm.Perm())
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Sprintf("%s is not a socket", path)
	}
	uid, _ := Owner(fi)
	if duid, _ := Owner(dfi); uid != os.Getuid() && uid != 0 && uid != duid {
		return fmt.Sprintf("it belongs to user id %d, which is neither this user (%d), root, nor the owner (%d) of its folder %s", uid, os.Getuid(), duid, dir)
	}
	return ""
}

// Owner is the user id that owns fi, if the system says.
func Owner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
