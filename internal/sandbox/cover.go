package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// visible returns paths that together cover the whole file system except
// hidden (absolute, cleaned): "/" itself when nothing is hidden, else, on
// the way down to each hidden path, every sibling that leads to none.
// Landlock only allows, so "all but these" is spelled as the allowed rest.
func visible(hidden []string) []string {
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		if isHidden(dir, hidden) {
			return
		}
		if !leadsToHidden(dir, hidden) {
			out = append(out, dir)
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return // unreadable: not granted
		}
		for _, e := range entries {
			// A link is not granted: its target is granted, or not, where it
			// is (/var/run's is /run, where the credentials are).
			if e.Type()&os.ModeSymlink == 0 {
				walk(filepath.Join(dir, e.Name()))
			}
		}
	}
	walk("/")
	return out
}

func isHidden(path string, hidden []string) bool {
	for _, h := range hidden {
		if path == h {
			return true
		}
	}
	return false
}

// leadsToHidden reports whether a hidden path lies strictly below dir.
func leadsToHidden(dir string, hidden []string) bool {
	prefix := dir
	if prefix != "/" {
		prefix += "/"
	}
	for _, h := range hidden {
		if strings.HasPrefix(h, prefix) {
			return true
		}
	}
	return false
}

// realPaths resolves links, so that a hidden folder reached through a
// link (/var/run → /run) is hidden where it really is. A path that does
// not exist is kept as it is: nothing there to hide or grant yet.
func realPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, p)
	}
	return out
}
