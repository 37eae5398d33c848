package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/fsperm"
)

// systemRuntimeDir is the runtime folder systemd makes for the service
// (RuntimeDirectory=agenthost). A variable so tests can move it.
var systemRuntimeDir = "/run/agenthost"

// RuntimeDirectory resolves plugins.runtime_dir, for display and for finding
// the daemon's sockets; it creates and checks nothing (see
// EnsureRuntimeDirectory). In order:
//
//  1. plugins.runtime_dir, if set;
//  2. $RUNTIME_DIRECTORY (set by systemd's RuntimeDirectory=; first entry);
//  3. /run/agenthost, if that folder exists, so that the CLI run from a
//     shell (which has no $RUNTIME_DIRECTORY) finds the folder the service
//     uses;
//  4. $XDG_RUNTIME_DIR/agenthost;
//  5. <os.TempDir()>/agenthost-<uid>.
func (p Plugins) RuntimeDirectory() string {
	d, _ := p.runtimeDirectory()
	return d
}

// runtimeDirectory is RuntimeDirectory, and whether the result is the
// shared-temp fallback (step 5).
func (p Plugins) runtimeDirectory() (dir string, shared bool) {
	if p.RuntimeDir != "" {
		return p.RuntimeDir, false
	}
	if d := os.Getenv("RUNTIME_DIRECTORY"); d != "" {
		return strings.SplitN(d, ":", 2)[0], false
	}
	if fi, err := os.Stat(systemRuntimeDir); err == nil && fi.IsDir() {
		return systemRuntimeDir, false
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "agenthost"), false
	}
	return filepath.Join(os.TempDir(), "agenthost-"+strconv.Itoa(os.Getuid())), true
}

// EnsureRuntimeDirectory resolves the runtime folder as RuntimeDirectory
// does, creates it (mode 0700, with missing parents) if it does not exist,
// and returns it. The daemon must call this, not RuntimeDirectory, before it
// puts sockets there.
//
// The fallback under os.TempDir() lives in a folder anyone may write to, so
// another user could have made it first: when that fallback is used, the
// folder must be a real directory (not a symlink) owned by this user with
// no write permission for group or others, or an error says what is wrong
// and how to fix it. Other locations (configured, or systemd's) must be
// folders of this user or root that others may not write to (see
// fsperm.DirProblem; a systemd RuntimeDirectoryMode= that shares the folder
// with a group is kept).
func (p Plugins) EnsureRuntimeDirectory() (string, error) {
	dir, shared := p.runtimeDirectory()
	if shared {
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("runtime folder %s: %w", dir, err)
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return "", fmt.Errorf("runtime folder %s: %w", dir, err)
		}
		if err := checkPrivateDir(dir, fi); err != nil {
			return "", err
		}
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("runtime folder %s: %w (set plugins.runtime_dir to a folder this user may write)", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("runtime folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("runtime folder %s is not a folder", dir)
	}
	if p := fsperm.DirProblem(fi); p != "" {
		return "", fmt.Errorf("runtime folder %s %s; use a folder of this user's (plugins.runtime_dir)", dir, p)
	}
	if !writable(dir) {
		return "", fmt.Errorf("runtime folder %s is not writable by this user (is it the service's?); run as the service's user, or set plugins.runtime_dir", dir)
	}
	return dir, nil
}

// checkPrivateDir checks the Lstat result fi of dir: a directory, not a
// symlink, owned by this user with no group or other write bits (the last
// two where the system has such permissions; see fsperm.Problem).
func checkPrivateDir(dir string, fi os.FileInfo) error {
	const fix = "remove it, or set plugins.runtime_dir or $XDG_RUNTIME_DIR to a private folder"
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("runtime folder %s is a symbolic link, not a folder made by this user; %s", dir, fix)
	case !fi.IsDir():
		return fmt.Errorf("runtime folder %s is not a folder; %s", dir, fix)
	}
	if p := fsperm.Problem(fi, "chmod 700 it if it is yours", os.Getuid()); p != "" {
		return fmt.Errorf("runtime folder %s %s; %s", dir, p, fix)
	}
	return nil
}

// StateDirectory resolves plugins.state_dir, where plugins keep their data
// (a folder each) and the host its cache of plugin descriptions; it creates
// nothing. In order: plugins.state_dir; $STATE_DIRECTORY (systemd's
// StateDirectory=); $XDG_STATE_HOME/agenthost; ~/.local/state/agenthost;
// "" when none can be found (no home folder).
func (p Plugins) StateDirectory() string {
	if p.StateDir != "" {
		return p.StateDir
	}
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		return strings.SplitN(d, ":", 2)[0]
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agenthost")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		return filepath.Join(home, ".local", "state", "agenthost")
	}
	return ""
}

// CheckStateDirectory checks the state folder (see StateDirectory), if it
// exists, as the runtime folder is: it must belong to this user or root,
// and others may not write to it (fsperm.DirProblem). One that does not
// exist yet is made by this user when first written.
func (p Plugins) CheckStateDirectory() error {
	dir := p.StateDirectory()
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		return fmt.Errorf("state folder %s is not a folder (plugins.state_dir)", dir)
	}
	if p := fsperm.DirProblem(fi); p != "" {
		return fmt.Errorf("state folder %s %s; use a folder of this user's (plugins.state_dir)", dir, p)
	}
	return nil
}

// ControlSocketPath resolves conversation.control_socket: the configured
// value, else <runtime dir>/control.sock (see Plugins.RuntimeDirectory).
func (c *Config) ControlSocketPath() string {
	if c.Conversation.ControlSocket != "" {
		return c.Conversation.ControlSocket
	}
	return filepath.Join(c.Plugins.RuntimeDirectory(), "control.sock")
}
