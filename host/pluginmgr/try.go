package pluginmgr

import (
	"context"
	"os"
	"path/filepath"
)

// Find returns the binary the daemon would run for the plugin name: the
// first of dirs that holds an executable file of that name; "" for none.
func Find(dirs []string, name string) string {
	if ignored(name) || name != filepath.Base(name) {
		return ""
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return path
		}
	}
	return ""
}

// Try starts the plugin at path as the daemon does (its pin, its sandbox,
// Describe, Configure with its settings) and stops it: what its first
// start would say. A refusal of its settings is a *pluginv1.ConfigError.
// Its sockets and its data folder are in o.RuntimeDir, the caller's
// scratch folder: a trial leaves nothing in the daemon's state folder.
func Try(ctx context.Context, o Options, name, path string) error {
	m := New(o, nil)
	m.o.dataDir = filepath.Join(o.RuntimeDir, "data")
	if err := os.MkdirAll(filepath.Join(m.o.dataDir, name), 0o700); err != nil {
		return err
	}
	if problem := untrusted(filepath.Dir(path)); problem != "" {
		return &untrustedError{"plugin folder " + filepath.Dir(path) + ": " + problem}
	}
	if problem := untrusted(path); problem != "" {
		return &untrustedError{"plugin binary " + path + ": " + problem}
	}
	if err := os.MkdirAll(m.socketDir, 0o700); err != nil {
		return err
	}
	inst, err := m.start(ctx, name, path)
	if err != nil {
		return err
	}
	inst.Kill()
	return nil
}

type untrustedError struct{ msg string }

func (e *untrustedError) Error() string {
	return e.msg + " (other users could change what agenthost runs)"
}
