package pluginmgr

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"syscall"
)

// A plugin process has a socket folder of its own under the plugin socket
// folder (its go-plugin socket and its TMPDIR): the only place of the
// runtime folder its sandbox lets it write, so it can touch neither another
// plugin's socket nor the control socket. Its manager holds a shared lock
// on it while it lives; what nobody holds (left by a daemon or an
// `agenthost call` that died) is removed when a manager starts. Several
// processes (the daemon, `agenthost mcp`, `agenthost call`) may share the
// runtime folder: each finds only its own folders locked by itself.

// sweepSockets creates the plugin socket folder and removes what no
// living manager holds there.
func (m *Manager) sweepSockets() error {
	if err := os.MkdirAll(m.socketDir, 0o700); err != nil {
		return fmt.Errorf("creating the plugin socket folder: %w", err)
	}
	os.Chmod(m.socketDir, 0o700)
	entries, _ := os.ReadDir(m.socketDir)
	removed := 0
	for _, e := range entries {
		p := filepath.Join(m.socketDir, e.Name())
		f, err := os.Open(p)
		if err == nil && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // in use
			continue
		}
		os.RemoveAll(p)
		if f != nil {
			f.Close()
		}
		removed++
	}
	if removed > 0 {
		m.log.Info("removed what an earlier run left in the plugin socket folder", "dir", m.socketDir, "entries", removed)
	}
	m.o.cache.sweep()
	return nil
}

// socketFolder makes a new process's socket folder and holds it. Its name
// is short: a socket's path has room for 107 bytes.
func (m *Manager) socketFolder() (string, *os.File, error) {
	for range 20 {
		n, _ := rand.Int(rand.Reader, big.NewInt(36*36*36*36))
		dir := filepath.Join(m.socketDir, fmt.Sprintf("%04s", n.Text(36)))
		err := os.Mkdir(dir, 0o700)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("its socket folder: %w", err)
		}
		f, err := os.Open(dir)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("its socket folder: %w", err)
		}
		return dir, f, nil
	}
	return "", nil, errors.New("its socket folder: no free name")
}
