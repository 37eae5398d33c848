package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// The decoder runs under bounds the kernel holds, set before ffmpeg runs
// by this very binary started as a small wrapper (argv[0] decoderArgv0):
// it lowers its own limits and execs ffmpeg, which keeps them for its whole
// life and cannot raise them again (that takes CAP_SYS_RESOURCE):
//
//   - RLIMIT_DATA: its private writable memory (heap, anonymous maps), the
//     memory a hostile sound makes it take. An allocation past the bound
//     fails: ffmpeg says "Cannot allocate memory" and ends, and nothing else
//     on the speaker is touched (the OOM killer is never asked to choose).
//   - nice 10: its share of the CPU when the CPU is contended, so that a
//     decoder that spins cannot starve the daemon (a niceness it may not
//     lower again). RLIMIT_CPU, a total of CPU seconds, would end an endless
//     radio; a decoder that spins without sound is ended by the watchdog.
//   - RLIMIT_CORE 0 and RLIMIT_FSIZE 0: a crash writes no core dump, and it
//     writes no file (its output is a pipe).
//
// A wrapper of our own rather than prlimit(1): no other program is needed,
// the bounds are set by setrlimit(2) in the process that becomes ffmpeg
// (never after it started), and the niceness by the thread that execs.

const (
	decoderArgv0 = "agenthost-media-decoder"
	decoderNice  = 10
)

func init() {
	if len(os.Args) > 0 && os.Args[0] == decoderArgv0 {
		err := execBounded(os.Args[1:])
		fmt.Fprintf(os.Stderr, "the decoder's bounds cannot be set: %v\n", err)
		os.Exit(127)
	}
}

// boundedCommand is the argv that runs ffmpeg with args under a memory
// bound of dataBytes, through this binary as the wrapper.
func boundedCommand(dataBytes int64, ffmpeg string, args []string) []string {
	return append([]string{decoderArgv0, strconv.FormatInt(dataBytes, 10), ffmpeg}, args...)
}

// execBounded sets the bounds and execs the program; it returns only on a
// failure. args: the data bound in bytes, the program, its arguments.
func execBounded(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("want a bound and a program, got %q", args)
	}
	data, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("the memory bound %q: %w", args[0], err)
	}
	// The niceness is the calling thread's (Linux), and exec keeps that
	// thread: the same one must do both.
	runtime.LockOSThread()
	for _, l := range []struct {
		what     string
		resource int
		max      uint64
	}{{"memory (RLIMIT_DATA)", syscall.RLIMIT_DATA, data}, {"core dumps", syscall.RLIMIT_CORE, 0}, {"file size", syscall.RLIMIT_FSIZE, 0}} {
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: l.max, Max: l.max}); err != nil {
			return fmt.Errorf("%s: %w", l.what, err)
		}
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, decoderNice); err != nil {
		return fmt.Errorf("niceness: %w", err)
	}
	return syscall.Exec(args[1], append([]string{args[1]}, args[2:]...), os.Environ())
}

// parseMemory reads decoder_memory: "128MiB", "1GiB"; 64 MiB to 4 GiB.
func parseMemory(s string) (int64, error) {
	bad := fmt.Errorf("decoder_memory %q is not a size of 64MiB to 4GiB like 128MiB (below 64MiB ffmpeg cannot load its libraries)", s)
	unit := int64(1 << 20)
	num, ok := strings.CutSuffix(s, "MiB")
	if !ok {
		if num, ok = strings.CutSuffix(s, "GiB"); !ok {
			return 0, bad
		}
		unit = 1 << 30
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > 4096 || n*unit < 64<<20 || n*unit > 4<<30 {
		return 0, bad
	}
	return n * unit, nil
}
