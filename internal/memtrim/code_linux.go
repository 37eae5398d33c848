//go:build linux

package memtrim

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// afterScan, when a test sets it, runs between the scan of the mappings
// and the madvise calls: a seam to place a concurrent unmap and map there.
var afterScan func()

// atStart holds the header lines of the read-only file mappings the process
// had when this package initialised: the executable and the libraries the
// loader mapped before the program started (its DT_NEEDED closure), none of
// which is ever unmapped. Only those are trimmed: a library loaded later
// can be unloaded (dlclose) or still be loading (dlopen maps the file
// read-only first, then its writable segments over it) while a trim runs,
// and MADV_DONTNEED on a range that another thread remapped between the
// scan and the madvise would zero memory the process wrote.
var atStart = startMappings()

func startMappings() map[string]bool {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	m := make(map[string]bool)
	for _, line := range strings.Split(string(maps), "\n") {
		if fields := strings.Fields(line); candidate(fields) {
			m[strings.Join(fields, " ")] = true
		}
	}
	return m
}

// candidate reports whether a mapping's header fields name a read-only
// mapping of a regular file (not a device: a sound card's status page is
// one), one the trim may drop.
func candidate(fields []string) bool {
	return len(fields) == 6 && strings.HasPrefix(fields[5], "/") && !strings.HasPrefix(fields[5], "/dev/") &&
		fields[3] != "00:00" && !strings.Contains(fields[1], "w")
}

// releaseCode drops this process's mappings of the pages of its executable
// and of the libraries mapped before it started (see atStart; they stay in
// the page cache, and come back on the next use). Start-up touches most of the code once; an idle process
// needs little of it, and a page that no process maps is the first the
// system reclaims under memory pressure.
//
// Only read-only mappings of regular files (not devices: a sound card's
// status page is one) that hold nothing but the file's own bytes are
// dropped: a page the process changed (the loader's relocations in RELRO:
// type descriptors, itabs, the GOT of a position-independent or cgo binary)
// shows as Anonymous in smaps, and dropping it would bring back the
// unpatched file contents.
// header reports whether a line of smaps starts a mapping: its first word
// is an address range ("7f…-7f…"), where the other lines start with a
// field name ending in ':'.
func header(line []byte) bool {
	word, _, _ := bytes.Cut(line, []byte(" "))
	return bytes.IndexByte(word, '-') > 0 && !bytes.HasSuffix(word, []byte(":"))
}

func releaseCode() {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	defer f.Close()
	type span struct{ start, end uint64 }
	var drop []span
	var cur *span // the mapping being read, if it is a candidate
	// Line by line through a small buffer: the re-trim after each
	// collection while idle must not grow the heap it just left.
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Bytes()
		if header(line) {
			cur = nil // a mapping's header: address range, permissions, offset, device, inode[, path]
			fields := strings.Fields(string(line))
			if !candidate(fields) || !atStart[strings.Join(fields, " ")] {
				continue // anonymous, a device or special file, deleted (a 7th field), writable, or mapped since start
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
		if cur != nil && bytes.HasPrefix(line, []byte("Anonymous:")) {
			if v := bytes.TrimSpace(line[len("Anonymous:"):]); !bytes.HasPrefix(v, []byte("0 ")) && !bytes.Equal(v, []byte("0")) {
				cur.end = cur.start // changed by this process: keep
			}
		}
	}
	if sc.Err() != nil {
		return
	}
	if afterScan != nil {
		afterScan()
	}
	for _, s := range drop {
		if s.end > s.start {
			syscall.Syscall(syscall.SYS_MADVISE, uintptr(s.start), uintptr(s.end-s.start), 4 /* MADV_DONTNEED */)
		}
	}
}
