//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ExitSandbox is the trampoline's exit status when it could not confine or
// start the program; its reason is on stderr.
const ExitSandbox = 126

func init() {
	if len(os.Args) < 2 || os.Args[0] != trampoline || os.Getenv(envPolicy) == "" {
		return
	}
	// The policy applies to this thread, which then becomes the program:
	// the main goroutine stays on it from here to the exec.
	runtime.LockOSThread()
	err := enter(os.Getenv(envPolicy), os.Args[1], os.Args[2:])
	// On stdout too: the daemon reads a child's first line there (the
	// go-plugin handshake, an MCP message), and says what it found instead.
	fmt.Fprintf(os.Stderr, "agenthost-sandbox: %v\n", err)
	fmt.Fprintf(os.Stdout, "agenthost-sandbox: %v\n", err)
	os.Exit(ExitSandbox)
}

var abiOnce = sync.OnceValues(func() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 1 {
		if errors.Is(err, unix.EPERM) {
			return 0, fmt.Errorf("%w: its system calls are forbidden here (a seccomp filter: under systemd, allow landlock_create_ruleset landlock_add_rule landlock_restrict_self in SystemCallFilter=, as the packaged unit does)", ErrUnsupported)
		}
		return 0, fmt.Errorf("%w (%v): enable it (a kernel built with it that does not run it: put landlock first in an lsm= list on the kernel command line, the rest as /sys/kernel/security/lsm shows, e.g. in /boot/firmware/cmdline.txt on a Raspberry Pi, and reboot; under qemu-user, which passes none of its system calls on, run natively) or set sandbox.mode: none to run plugins, MCP servers and hooks with the daemon's own rights", ErrUnsupported, err)
	}
	return v, nil
})

// ABI returns the kernel's Landlock ABI version, or ErrUnsupported.
func ABI() (int, error) { return abiOnce() }

// fsRights are the file-system rights each ABI version knows.
func fsRights(abi int) uint64 {
	switch {
	case abi >= 5:
		return (1 << 16) - 1
	case abi >= 3:
		return (1 << 15) - 1
	case abi == 2:
		return (1 << 14) - 1
	}
	return (1 << 13) - 1
}

const (
	readRights  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	fileRights  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	writeRights = ^uint64(0)
)

// enter applies the policy to this thread and execs the program; it
// returns only on failure.
func enter(policyJSON, path string, argv []string) error {
	var p Policy
	if err := json.Unmarshal([]byte(policyJSON), &p); err != nil {
		return fmt.Errorf("reading the policy: %w", err)
	}
	abi, err := ABI()
	if err != nil {
		return err
	}
	handled := fsRights(abi)
	attr := ll.RulesetAttr{HandledAccessFS: handled}
	if abi >= 6 {
		// Nor may it signal the daemon or reach its abstract sockets.
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("creating the Landlock ruleset: %w", err)
	}
	defer unix.Close(fd)
	hidden := realPaths(p.Hide)
	for _, dir := range visible(hidden) {
		rights := uint64(readRights)
		if p.Everywhere {
			rights = writeRights
		}
		if p.Devices && (dir == "/dev" || dir == "/sys" || strings.HasPrefix(dir, "/dev/") || strings.HasPrefix(dir, "/sys/")) {
			rights |= fileRights
		}
		// One that cannot be granted (gone since it was listed) is not.
		allow(fd, dir, rights&handled, true)
	}
	for _, f := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"} {
		allow(fd, f, fileRights&handled, true)
	}
	for _, dir := range realPaths(p.Read) {
		if err := allow(fd, dir, readRights&handled, true); err != nil {
			return err
		}
	}
	for _, dir := range realPaths(p.Write) {
		if err := allow(fd, dir, writeRights&handled, false); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("entering the Landlock sandbox: %w", err)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPolicy+"=") {
			env = append(env, kv)
		}
	}
	if fd, ok := strings.CutPrefix(path, "/proc/self/fd/"); ok {
		// A pinned binary, run from its descriptor: the program need not keep it.
		if n, err := strconv.Atoi(fd); err == nil && n > 2 {
			unix.CloseOnExec(n)
		}
	}
	// A binary still open for writing (a copy finishing as it is started)
	// cannot be run yet: as exec.Cmd's caller would, try again a while.
	for range 250 {
		if err = syscall.Exec(path, argv, env); err != syscall.ETXTBSY {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("starting %s: %w", path, err)
}

// allow adds a rule for path; rights meant for folders are dropped for a
// file. A path that does not exist is skipped when optional, else an error.
func allow(ruleset int, path string, rights uint64, optional bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if optional || os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("the sandbox cannot open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("the sandbox cannot stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	if rights == 0 {
		return nil
	}
	if err := ll.LandlockAddPathBeneathRule(ruleset, &ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("the sandbox cannot grant %s: %w", path, err)
	}
	return nil
}
