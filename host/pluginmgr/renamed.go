package pluginmgr

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/host/supervise"
)

// A binary renamed into the folder (the documented way to install) is a
// new file: it is started while it is hashed. Hashing a plugin binary (20 MB
// for a Go build) took as long as a third of a reload, and load does it
// before the start; here the two run side by side, and the build is
// compared with the one serving once both are done. A pinned plugin is
// always hashed first (load): its pin is checked before anything runs.

// loadRenamed hands p's binary to its supervisor to be started and hashed
// at once; a build that turns out to be the one serving is dropped
// (supervise.ErrUnchanged). Later starts (restarts, lazy starts) know the
// hash.
func (m *Manager) loadRenamed(p *plugin) {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	name, path := p.name, p.path
	pending := &pendingLoad{} // its build is known once hashed
	var hash string           // only the supervisor's loop runs the starter
	start := func(ctx context.Context) (supervise.Child, error) {
		if hash != "" {
			return m.startBuild(ctx, p, hash)
		}
		hashed := make(chan error, 1)
		go func() {
			var err error
			startFault(name, "hashing")
			hash, err = fileHash(path)
			hashed <- err
		}()
		inst, err := m.start(ctx, name, path)
		herr := <-hashed
		if herr == nil {
			p.mu.Lock()
			p.hash, pending.hash = hash, hash
			p.mu.Unlock()
		} else if err == nil {
			inst.Kill()
			err = fmt.Errorf("cannot read %s: %w", path, herr)
		}
		if err != nil {
			return nil, err
		}
		if st := p.sup.Status(); (st.State == supervise.StateRunning || st.State == supervise.StateIdle) && p.serving(st) == hash {
			inst.Kill()
			m.log.Debug("plugin binary touched but unchanged; nothing to do", "plugin", name, "state", st.State)
			return nil, supervise.ErrUnchanged
		}
		return m.started(inst, p, hash)
	}
	handled := p.sup.Load(start, nil)
	p.mu.Lock()
	pending.handled = handled
	p.loading = pending
	p.mu.Unlock()
}
