//go:build linux

package memtrim

import (
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
//
// Only mappings that hold nothing but the file's own bytes are dropped: a
// page the process changed (the loader's relocations in RELRO: type
// descriptors, itabs, the GOT of a position-independent or cgo binary)
// shows as Anonymous in smaps, and dropping it would bring back the
// unpatched file contents.
func releaseCode() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	type span struct{ start, end uint64 }
	var drop []span
	var cur *span // the mapping being read, if it is a candidate
	for _, line := range strings.Split(string(smaps), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			cur = nil // a mapping's header: address range, permissions, offset, device, inode[, path]
			if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
				continue
			}
			lo, hi, _ := strings.Cut(fields[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil && end > start {
				drop = append(drop, span{start, end})
				cur = &drop[len(drop)-1]
			}
			continue
		}
		if cur != nil && len(fields) >= 2 && fields[0] == "Anonymous:" && fields[1] != "0" {
			cur.end = cur.start // changed by this process: keep
		}
	}
	for _, s := range drop {
		if s.end > s.start {
			syscall.Syscall(syscall.SYS_MADVISE, uintptr(s.start), uintptr(s.end-s.start), 4 /* MADV_DONTNEED */)
		}
	}
}
