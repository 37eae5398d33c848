//go:build unix

package fsperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// maxLinks bounds the links followed in one walk (the kernel's own is 40).
const maxLinks = 40

// Changers walks each path as the kernel resolves it, link by link, and
// says which users other than root could change what it names: the owners
// of the folders on the way, of each link and of the file itself, and,
// for a folder in inside, of what it holds. Each is returned with the first
// path found to be theirs. A part that any user (or a group other than
// root's, in root's part of the way) may write is an error: anyone could put
// their own file there. So is a part missing from a folder others may
// write with the sticky bit (as /tmp): anyone could make it. Otherwise a
// missing part ends the walk: only who may write its folder may make it,
// and they are counted already.
func Changers(paths, inside []string) (map[int]string, error) {
	w := &walker{users: map[int]string{}}
	for _, p := range paths {
		if err := w.walk(p, false); err != nil {
			return nil, err
		}
	}
	for _, p := range inside {
		if err := w.walk(p, true); err != nil {
			return nil, err
		}
	}
	return w.users, nil
}

// Names lists users (as Changers returns them) as "uid N (PATH)", by uid.
func Names(users map[int]string) string {
	var out []string
	for uid, p := range users {
		out = append(out, fmt.Sprintf("uid %d (%s)", uid, p))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

type walker struct {
	users map[int]string
	links int
}

func (w *walker) walk(path string, inside bool) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	fi, err := os.Lstat("/")
	if err != nil {
		return err
	}
	if _, err := w.note("/", fi); err != nil {
		return err
	}
	return w.follow("/", strings.Split(abs, "/"), inside)
}

// follow resolves the parts below cur, a folder with no link on its way.
func (w *walker) follow(cur string, parts []string, inside bool) error {
	shared := sharedDir(cur)
	for i, part := range parts {
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no link on its way: this is the kernel's ".."
			shared = sharedDir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			if shared {
				return fmt.Errorf("%s is missing from %s, where any user may make it: choose a folder that only root or one user can change", next, cur)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if shared, err = w.note(next, fi); err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if w.links++; w.links > maxLinks {
				return fmt.Errorf("%s: too many links on the way", next)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			rest := append(strings.Split(target, "/"), parts[i+1:]...)
			if filepath.IsAbs(target) {
				return w.follow("/", rest, inside)
			}
			return w.follow(cur, rest, inside)
		}
		cur = next
	}
	if !inside {
		return nil
	}
	entries, err := os.ReadDir(cur)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if err := w.follow(cur, []string{e.Name()}, false); err != nil {
			return err
		}
	}
	return nil
}

// note counts fi's owner, and says whether fi is a folder others may write
// whose entries only their owners may replace (the sticky bit).
func (w *walker) note(path string, fi fs.FileInfo) (shared bool, err error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, nil
	}
	if st.Uid != 0 {
		if _, seen := w.users[int(st.Uid)]; !seen {
			w.users[int(st.Uid)] = path
		}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return false, nil // a link's mode means nothing
	}
	switch {
	case !othersMayWrite(fi):
		return false, nil
	case fi.IsDir() && fi.Mode()&fs.ModeSticky != 0:
		return true, nil
	}
	perm := fi.Mode().Perm()
	return false, fmt.Errorf("%s has mode %04o: users other than its owner may change it; chmod go-w %s, or choose a folder that only root or one user can change", path, perm, path)
}

// sharedDir says whether others may write folder dir, with the sticky bit.
func sharedDir(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 && othersMayWrite(fi)
}

// othersMayWrite says whether users other than fi's owner may write it:
// any user, or a group other than root's in a part of root's (the group of
// another user's folder is theirs to share).
func othersMayWrite(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	perm := fi.Mode().Perm()
	return perm&0o002 != 0 || (ok && st.Uid == 0 && st.Gid != 0 && perm&0o020 != 0)
}
