//go:build linux

package memtrim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseCode drops this process's mappings of its own executable's pages
// (they stay in the page cache, and come back on the next use). Start-up
// touches most of the code once; an idle plugin needs little of it, and a
// page that no process maps is the first the system reclaims under memory
// pressure.
func releaseCode() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), 4 /* MADV_DONTNEED */)
	}
}
