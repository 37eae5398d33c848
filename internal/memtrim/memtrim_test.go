package memtrim

import (
	"os"
	"strconv"
	"strings"
	"testing"
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
