package memtrim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// mappingRSSKB is the resident size of the mapping that starts at addr.
func mappingRSSKB(t *testing.T, addr uintptr) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc here")
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, _, _ := strings.Cut(f[0], "-")
			in = lo == fmt.Sprintf("%x", addr)
			continue
		}
		if in && len(f) >= 2 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no mapping at %x", addr)
	return 0
}

// TestTrimHandsBackTheCleanPagesOfMappedLibraries: the C libraries a cgo
// host maps (libc, libstdc++, ALSA, PortAudio, ...) hold megabytes of code
// and read-only data that start-up touched; a trim drops them like the
// executable's own, and keeps what the process changed.
func TestTrimHandsBackTheCleanPagesOfMappedLibraries(t *testing.T) {
	const size = 64 << 10
	path := filepath.Join(t.TempDir(), "lib.so")
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i * 13)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clean, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(clean)
	// A relocated page: written once, then made read-only, as the loader
	// does with RELRO.
	patched, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(patched)
	patched[0] = 'X'
	if err := syscall.Mprotect(patched, syscall.PROT_READ); err != nil {
		t.Fatal(err)
	}
	// Both as the loader maps a library before the program starts (a
	// mapping made later is left alone: see atStart).
	defer func(m map[string]bool) { atStart = m }(atStart)
	atStart = startMappings()
	sum := 0
	for i := 0; i < size; i += 4096 {
		sum += int(clean[i]) + int(patched[i])
	}
	at := uintptr(unsafe.Pointer(&clean[0]))
	before := mappingRSSKB(t, at)
	Trim()
	after := mappingRSSKB(t, at)
	t.Logf("a read-only mapping of a file: %d kB resident before a trim, %d kB after (sum %d)", before, after, sum)
	if before == 0 || after != 0 {
		t.Errorf("a trim left %d of %d kB of a clean file mapping resident", after, before)
	}
	if clean[1] != content[1] || patched[0] != 'X' || patched[1] != content[1] {
		t.Errorf("after a trim the mappings read %q %q %q", clean[1], patched[0], patched[1])
	}
}
