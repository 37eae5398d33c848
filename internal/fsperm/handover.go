//go:build unix

package fsperm

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HandOver gives folder dir (inside top) and the file name in it to the
// user and group that own top, when this process is root and top belongs
// to someone else: what `sudo agenthost …` writes into the service's state
// folder must stay readable by the service. Links are not followed, so
// whoever owns top cannot point the change at another file.
func HandOver(top, dir, name string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Stat(top, &st); err != nil {
		return fmt.Errorf("the state folder: %w", err)
	}
	if st.Uid == 0 {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("handing %s to user id %d: %w", dir, st.Uid, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("handing %s to user id %d: %w", dir, st.Uid, err)
	}
	if err := unix.Fchownat(fd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("handing %s to user id %d: %w", filepath.Join(dir, name), st.Uid, err)
	}
	return nil
}
