//go:build unix

package fsperm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChangersFollowsLinksAndCountsEveryOwnerOnTheWay: the users who
// could change what a path names are the owners of each folder on the way,
// of each link, of the folders on a link's way and of the file; what a
// folder holds when asked; a folder others may write is refused, and in a
// sticky one a missing part is too.
func TestChangersFollowsLinksAndCountsEveryOwnerOnTheWay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("gives files to other users (uids 65534, 65533): run the tests as root")
	}
	base, err := os.MkdirTemp("", "fsperm-changers-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mk := func(p string, uid int, mode os.FileMode) string {
		t.Helper()
		p = filepath.Join(base, p)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	roots := mk("roots", 0, 0o755)
	mk("roots/lib", 0, 0o755)
	theirs := mk("theirs", 65534, 0o755)
	mk("theirs/lib", 65534, 0o755)
	others := mk("others", 65533, 0o755)
	shared := mk("shared", 0, 0o777|os.ModeSticky)
	mk("open", 0, 0o777)
	link := func(target, at string, uid int) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(base, at)); err != nil {
			t.Fatal(err)
		}
		os.Lchown(filepath.Join(base, at), uid, uid)
	}
	link(filepath.Join(theirs, "lib"), "roots/viaabs", 0)
	link("../theirs/lib", "roots/viarel", 0)
	link("lib", "roots/local", 0)
	if err := os.WriteFile(filepath.Join(roots, "lib", "planted.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(roots, "lib", "planted.so"), 65533, 65533)
	for _, c := range []struct {
		paths, inside []string
		want          []int
		err           string
	}{
		{paths: []string{filepath.Join(roots, "lib", "x.so")}},
		{paths: []string{filepath.Join(roots, "local", "x.so")}},
		{paths: []string{filepath.Join(theirs, "lib", "x.so")}, want: []int{65534}},
		{paths: []string{filepath.Join(roots, "viaabs", "x.so")}, want: []int{65534}},
		{paths: []string{filepath.Join(roots, "viarel", "x.so")}, want: []int{65534}},
		{inside: []string{filepath.Join(roots, "lib")}, want: []int{65533}},
		{paths: []string{filepath.Join(roots, "viaabs"), filepath.Join(others, "x")}, want: []int{65533, 65534}},
		{paths: []string{filepath.Join(shared, "missing", "x.so")}, err: "where any user may make it"},
		{paths: []string{filepath.Join(base, "open", "x.so")}, err: "chmod go-w"},
	} {
		users, err := Changers(c.paths, c.inside)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %v: %v, %v; want an error saying %q", c.paths, c.inside, users, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v %v: %v", c.paths, c.inside, err)
			continue
		}
		if len(users) != len(c.want) {
			t.Errorf("%v %v: users %v, want %v", c.paths, c.inside, users, c.want)
		}
		for _, uid := range c.want {
			if _, ok := users[uid]; !ok {
				t.Errorf("%v %v: users %v, want %v", c.paths, c.inside, users, c.want)
			}
		}
	}
}
