package memtrim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// rssFileKB reads this process's file-backed resident memory.
func rssFileKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc here")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Skip("no RssFile here")
	return 0
}

// TestTrimHandsBackCodePages: after a trim the process maps fewer pages of
// its files than before, and it keeps working (the pages come back).
func TestTrimHandsBackCodePages(t *testing.T) {
	before := rssFileKB(t)
	Trim()
	after := rssFileKB(t)
	t.Logf("file-backed RSS %d kB before a trim, %d kB after", before, after)
	if after >= before {
		t.Fatalf("a trim did not lower the file-backed RSS: %d kB → %d kB", before, after)
	}
}

// TestTrimKeepsRelocatedPages: a position-independent binary, as the
// packages build them, keeps working after a trim. Its loader patched
// pointers into pages that the file maps read-only (RELRO: type
// descriptors, itabs, the GOT); dropping those would bring back the
// unpatched file contents and crash the process at its next use of them.
func TestTrimKeepsRelocatedPages(t *testing.T) {
	cgo := []string{"0"}
	if _, err := exec.LookPath("gcc"); err == nil {
		cgo = append(cgo, "1")
	}
	for _, c := range cgo {
		t.Run("cgo="+c, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "trimmed")
			build := exec.Command("go", append(append([]string{"build", "-buildmode=pie"}, testbin.ReleaseFlags...), "-o", bin, "./testdata/trimmed")...)
			build.Env = append(os.Environ(), "CGO_ENABLED="+c)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, err := exec.Command(bin).CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "ok ") {
				t.Fatalf("after a trim the program failed: %v\n%s", err, out)
			}
		})
	}
}
