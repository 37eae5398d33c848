// Command nolandlock runs a program as on a kernel without Landlock: a
// seccomp filter answers landlock_create_ruleset with ENOSYS, as a kernel
// built without it does, and lets every other call through. For the tests
// of the daemon's fail-closed start; linux/amd64 and arm64.
//
// Usage: nolandlock PROGRAM [ARGS...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nolandlock PROGRAM [ARGS...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nolandlock:", err)
		os.Exit(2)
	}
	// The filter is this thread's, and the program's once this thread execs.
	runtime.LockOSThread()
	const (
		ldW    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		nrOff  = 0 // struct seccomp_data: int nr
		enosys = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
	)
	prog := []unix.SockFilter{
		{Code: ldW, K: nrOff},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_LANDLOCK_CREATE_RULESET},
		{Code: ret, K: enosys},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		fail(err)
	}
	fail(syscall.Exec(path, os.Args[1:], os.Environ()))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "nolandlock:", err)
	os.Exit(2)
}
