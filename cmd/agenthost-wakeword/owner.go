package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// asOwner: as root, the detector loads and writes nothing another user
// could change. Before it loads ONNX Runtime or a model, reads a verifier
// or writes one (into folders), it becomes the one user who could change
// any of them (who owns a folder on the way, a link or a file: on
// bookworm the service user, who fetched ONNX Runtime into wake_word.dir;
// the state folder is theirs too): a library or model of theirs then runs
// with their rights, not root's, and a link of theirs leads only where
// they may write. With only root's files it stays root. Files of two
// users, or a folder anyone may write, are refused (wakeword.Owner). It
// says whom it became ("" when it did not).
//
// The detector, not the command that starts it, drops: it alone knows what
// it loads, it reads what root hands it (the recordings) first, and
// `agenthost check`, `agenthost wakeword enroll` and a daemon run as root
// keep their own rights (root's configuration, the microphone).
func asOwner(dir, lib string, models []string, folders ...string) (string, error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	u, path, err := wakeword.Owner(dir, lib, models, folders...)
	if err != nil || u == nil {
		return "", err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return "", fmt.Errorf("user %s's id %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return "", fmt.Errorf("user %s's group %q: %w", u.Username, u.Gid, err)
	}
	// A change of user clears the parent-death signal the host set: set it again.
	var sig int32
	unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0)
	parent := os.Getppid()
	if err := syscall.Setgroups(nil); err != nil {
		return "", fmt.Errorf("dropping root's groups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return "", fmt.Errorf("becoming group %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return "", fmt.Errorf("becoming user %s: %w", u.Username, err)
	}
	if sig != 0 {
		unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0)
		if os.Getppid() != parent {
			return "", fmt.Errorf("the host that started the detector is gone")
		}
	}
	who := fmt.Sprintf("%s (uid %d), who owns %s", u.Username, uid, path)
	fmt.Fprintf(os.Stderr, "agenthost-wakeword: running as %s: root loads nothing another user could change\n", who)
	return who, nil
}

// asWho says whom the detector ran as in an error it met after asOwner
// (a file that user may not read or write, say).
func asWho(err error, who string) error {
	if who == "" {
		return err
	}
	return fmt.Errorf("%w (as root, the detector runs as %s: what it reads and writes must be open to that user)", err, who)
}
