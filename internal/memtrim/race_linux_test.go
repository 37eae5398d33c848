package memtrim

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// TestATrimLeavesAloneWhatTookTheAddressOfAMappingAfterItsScan: a library
// that another thread unloads (dlclose: ALSA's plugins when PortAudio
// terminates, NSS modules), or one being loaded (dlopen maps the whole
// file read-only first, then its writable segments over it), can leave a
// read-only file mapping in the scan of /proc/self/smaps that is something
// else by the time of the madvise. MADV_DONTNEED on that range would zero
// memory the process wrote (malloc's, or the loader's relocations).
// The concurrent unload and map are placed by a seam (afterScan): the
// window is too narrow to hit with a real dlclose.
func TestATrimLeavesAloneWhatTookTheAddressOfAMappingAfterItsScan(t *testing.T) {
	const size = 64 << 10
	path := filepath.Join(t.TempDir(), "plugin.so")
	if err := os.WriteFile(path, bytes.Repeat([]byte{7}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	addr := uintptr(unsafe.Pointer(&m[0]))
	_ = m[0] + m[size-1]
	defer syscall.Syscall(syscall.SYS_MUNMAP, addr, size, 0)
	var data []byte
	afterScan = func() {
		// The library goes, and anonymous memory (malloc's) takes its place.
		p, _, errno := syscall.Syscall6(syscall.SYS_MMAP, addr, size, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_FIXED, ^uintptr(0), 0)
		if errno != 0 || p != addr {
			t.Fatalf("mmap over %x: %v", addr, errno)
		}
		data = m // now the anonymous memory
		for i := range data {
			data[i] = 0xab
		}
	}
	defer func() { afterScan = nil }()
	Trim()
	if data == nil {
		t.Fatal("the trim never scanned")
	}
	for i, b := range data {
		if b != 0xab {
			t.Fatalf("a trim changed memory mapped after its scan: byte %d reads %#x", i, b)
		}
	}
}
