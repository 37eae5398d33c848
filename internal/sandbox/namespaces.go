package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The second mechanism, for a kernel without Landlock (the Raspberry Pi
// OS kernel is built without it): the child runs in user, mount and PID
// namespaces of its own, made by bubblewrap (Debian's bwrap, the sandbox
// of Flatpak), where the system is mounted read-only, the daemon's files
// are covered by empty read-only tmpfs and only its grants are bound back.
// It holds no capability there (bwrap drops them, and it may make no user
// namespace of its own, so the mounts over the daemon's files stay locked),
// it sees only its own processes, so it cannot name the daemon to signal
// it, and the daemon makes itself non-dumpable (DenyInspection), so the
// shared /proc gives no way into its files either.

// bwrap is how to run bubblewrap here, found once: its path and how /proc
// is given to the child (a fresh one when the kernel lets a namespace
// mount it; under systemd's ProtectKernelTunables it does not, and the
// outer one is bound instead).
type bwrap struct {
	path string
	proc []string
}

var findBwrap = sync.OnceValues(func() (bwrap, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return bwrap{}, errors.New("bubblewrap is not installed (sudo apt install bubblewrap)")
	}
	var last error
	for _, proc := range [][]string{{"--proc", "/proc"}, {"--bind", "/proc", "/proc"}} {
		b := bwrap{path: path, proc: proc}
		// Bounded: a probe that hangs must not hold every child's start.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, path, append(b.args(Policy{}), "--", "true")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err == nil {
			return b, nil
		}
		last = fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return bwrap{}, fmt.Errorf("bubblewrap cannot make user namespaces here (%v): allow them (under systemd: RestrictNamespaces=user mnt pid and the mount calls, as the package's generator does when the kernel has no Landlock; sysctl user.max_user_namespaces > 0)", last)
})

// args are bwrap's options that apply p (already absolute, with the
// defaults) to the program that follows them.
func (b bwrap) args(p Policy) []string {
	args := []string{"--unshare-user", "--unshare-pid", "--disable-userns", "--cap-drop", "ALL", "--die-with-parent"}
	if p.Everywhere {
		args = append(args, "--bind", "/", "/")
	} else {
		args = append(args, "--ro-bind", "/", "/")
	}
	if p.Devices {
		args = append(args, "--dev-bind", "/dev", "/dev", "--bind-try", "/sys", "/sys")
	} else {
		args = append(args, "--dev", "/dev")
	}
	args = append(args, b.proc...)

	// Mounts go down the tree: a folder granted inside a hidden one is
	// bound after the tmpfs that hides its parent; at the same path the
	// grant comes last and wins, as with Landlock.
	type mount struct {
		path string
		args []string
	}
	var mounts []mount
	var tmpfs []string
	for _, h := range slices.Compact(slices.Sorted(slices.Values(realPaths(p.Hide)))) {
		st, err := os.Stat(h)
		switch {
		case err != nil:
			continue // nothing there to hide
		case st.IsDir():
			mounts = append(mounts, mount{h, []string{"--perms", "0111", "--tmpfs", h}})
			tmpfs = append(tmpfs, h)
		default:
			mounts = append(mounts, mount{h, []string{"--ro-bind", "/dev/null", h}})
		}
	}
	for _, r := range realPaths(p.Read) {
		mounts = append(mounts, mount{r, []string{"--ro-bind-try", r, r}})
	}
	for _, w := range realPaths(p.Write) {
		mounts = append(mounts, mount{w, []string{"--bind", w, w}})
	}
	depth := func(path string) int { return strings.Count(filepath.Clean(path), "/") }
	slices.SortStableFunc(mounts, func(a, b mount) int { return depth(a.path) - depth(b.path) })
	for _, m := range mounts {
		args = append(args, m.args...)
	}
	for _, t := range tmpfs {
		args = append(args, "--remount-ro", t)
	}
	return args
}

// confineNamespaces rewrites cmd to run under bwrap with p.
func confineNamespaces(cmd *exec.Cmd, p Policy) error {
	b, err := findBwrap()
	if err != nil {
		return err
	}
	cmd.Args = append(append(append([]string{"bwrap"}, b.args(p)...), "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path = b.path
	return nil
}
