package wakeword

import (
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/agenthost/agenthost/internal/fsperm"
)

// RootFix is what root may do instead of handing the detector's files one
// owner.
const RootFix = "or run the command as the service user: sudo -u agenthost agenthost …"

// Owner is whom the detector becomes as root (cmd/agenthost-wakeword):
// the one user who could change what it loads or writes — ONNX Runtime
// (lib, or the one FindONNXRuntime finds in dir), the models, and what
// dir/models and folders (the verifiers') hold — with a path of theirs;
// nil with only root's files. Files of two users, a folder anyone may
// write or an owner without an account are an error that says what to do.
// host/preflight asks it too: check and run say so before they start it.
func Owner(dir, lib string, models []string, folders ...string) (*user.User, string, error) {
	var paths []string
	inside := []string{filepath.Join(dir, "models")}
	if lib == "" {
		var err error
		if lib, err = FindONNXRuntime(dir); err != nil {
			inside = append(inside, filepath.Join(dir, "onnxruntime"))
		}
	}
	if lib != "" {
		paths = append(paths, lib)
	}
	for _, m := range models {
		if IsPath(m) {
			paths = append(paths, m)
		}
	}
	for _, f := range folders {
		if f != "" {
			inside = append(inside, f)
		}
	}
	users, err := fsperm.Changers(paths, inside)
	if err != nil {
		return nil, "", fmt.Errorf("as root, the detector loads nothing that users other than root and one owner may change: %w; %s", err, RootFix)
	}
	if len(users) == 0 {
		return nil, "", nil
	}
	if len(users) > 1 {
		return nil, "", fmt.Errorf("as root, the detector runs as the one user who owns its files (the wake word's and the verifiers'), but they belong to %s: give them one owner (the service user: chown -R agenthost: …), %s", fsperm.Names(users), RootFix)
	}
	var uid int
	var path string
	for uid, path = range users {
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, "", fmt.Errorf("%s belongs to uid %d, which has no account here, and root runs the detector as its owner: chown it to the service user (agenthost), or choose another folder", path, uid)
	}
	return u, path, nil
}
