// Package pluginmgr owns the plugin processes: it finds plugin binaries in the
// configured folders, starts them over hashicorp/go-plugin, registers their
// services, restarts crashed ones with backoff (parking those that keep
// crashing), and hot-reloads a binary that is added, replaced or removed,
// starting the new instance before the old one stops.
package pluginmgr

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/backoff"
	"github.com/agenthost/agenthost/internal/fsperm"
)

// Registry is where plugins' services go.
type Registry interface {
	Put(services.Provider) error
	Remove(id string)
}

// Options configure a Manager.
type Options struct {
	// Plugins is the plugins section of the configuration (config.Default
	// has the defaults; the manager has none of its own).
	Plugins    config.Plugins
	RuntimeDir string // private folder for the plugins' sockets
	DataDir    string // optional: each plugin gets DataDir/<name>
	// Watch turns hot reload on; `agenthost call` without a daemon runs without it.
	Watch bool
	Log   *slog.Logger
}

// settings are Options resolved for use.
type settings struct {
	dirs         []string
	dataDir      string
	autoMTLS     bool
	startTimeout time.Duration
	debounce     time.Duration
	stopGrace    time.Duration
	sha256       map[string]string // name -> pinned digest
	config       map[string]any    // name -> the plugin's config subtree
	restart      backoff.Backoff
	maxCrashes   int
	crashWindow  time.Duration
	watch        bool
}

// Manager runs the plugins.
type Manager struct {
	o         settings
	reg       Registry
	log       *slog.Logger
	socketDir string

	ctx     context.Context
	mu      sync.Mutex
	plugins map[string]*managed // by name
	stopped bool                // Run is ending: no new plugin loops
	wg      sync.WaitGroup
}

// New returns a manager that puts plugins' services into reg.
func New(o Options, reg Registry) *Manager {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := o.Plugins
	s := settings{dirs: p.Dirs, dataDir: o.DataDir, autoMTLS: p.AutoMTLS, startTimeout: p.StartTimeout.D(), debounce: p.Debounce.D(),
		stopGrace: p.StopGrace.D(), sha256: p.SHA256, config: p.Config,
		restart:    backoff.Backoff{Base: p.Restart.Base.D(), Cap: p.Restart.Cap.D()},
		maxCrashes: p.Restart.MaxCrashes, crashWindow: p.Restart.Window.D(), watch: o.Watch}
	return &Manager{o: s, reg: reg, log: log.With("component", "plugins"), plugins: map[string]*managed{},
		socketDir: filepath.Join(o.RuntimeDir, "plugins")}
}

// Name implements host.Component.
func (m *Manager) Name() string { return "plugin manager" }

// Run starts every plugin found, reports ready, then watches the folders
// until ctx ends, and stops every plugin before it returns.
func (m *Manager) Run(ctx context.Context, ready func()) error {
	m.ctx = ctx
	if err := os.MkdirAll(m.socketDir, 0o700); err != nil {
		return fmt.Errorf("creating the plugin socket folder: %w", err)
	}
	os.Chmod(m.socketDir, 0o700)
	var w *fsnotify.Watcher
	if m.o.watch {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			return fmt.Errorf("watching the plugin folders: %w", err)
		}
		defer w.Close()
	}
	for _, dir := range m.o.dirs {
		if w != nil {
			if err := w.Add(dir); err != nil {
				m.log.Warn("cannot watch a plugin folder; plugins added there later need a restart", "dir", dir, "err", err)
			}
		}
		m.scan(dir)
	}
	// Wait for the first start of every plugin found, so the first register is whole.
	m.mu.Lock()
	all := make([]*managed, 0, len(m.plugins))
	for _, p := range m.plugins {
		all = append(all, p)
	}
	m.mu.Unlock()
	for _, p := range all {
		select {
		case <-p.settled:
		case <-ctx.Done():
		}
	}
	ready()
	if w != nil {
		m.watch(ctx, w)
	} else {
		<-ctx.Done()
	}
	m.mu.Lock()
	for _, p := range m.plugins {
		close(p.quit)
	}
	m.stopped = true
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// scan looks at every file of a plugin folder.
func (m *Manager) scan(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		m.log.Warn("cannot read a plugin folder", "dir", dir, "err", err)
		return
	}
	for _, e := range entries {
		m.changed(filepath.Join(dir, e.Name()))
	}
}

// untrusted says why a plugin folder or binary must not be run: a user
// other than root and the host's own may change it, and so run code as the
// host. "" means it may be run.
func untrusted(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fsperm.Problem(fi, "fix: chmod go-w "+path, 0, os.Getuid())
}

// watch turns folder events into debounced per-file checks.
func (m *Manager) watch(ctx context.Context, w *fsnotify.Watcher) {
	timers := map[string]*time.Timer{}
	due := make(chan string, 64)
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ignored(filepath.Base(ev.Name)) {
				continue
			}
			if t := timers[ev.Name]; t != nil {
				t.Reset(m.o.debounce)
				continue
			}
			name := ev.Name
			timers[name] = time.AfterFunc(m.o.debounce, func() {
				select {
				case due <- name:
				case <-ctx.Done():
				}
			})
		case path := <-due:
			delete(timers, path)
			if slices.Contains(m.o.dirs, path) {
				m.scan(path) // the folder itself changed (its mode, say)
				continue
			}
			m.changed(path)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			m.log.Warn("plugin folder watch error", "err", err)
		}
	}
}

// ignored says which names are never plugins: hidden and temporary files of
// an install in progress (write to a temporary name, then rename).
func ignored(base string) bool {
	return strings.HasPrefix(base, ".") || strings.HasSuffix(base, ".tmp") || strings.HasSuffix(base, "-go-tmp-umask") ||
		strings.HasSuffix(base, "~") || strings.HasSuffix(base, ".md")
}

// changed looks at one path after it settled and tells its plugin.
func (m *Manager) changed(path string) {
	base := filepath.Base(path)
	if ignored(base) {
		return
	}
	fi, err := os.Stat(path)
	gone := err != nil
	if !gone && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0) {
		m.log.Debug("not a plugin (not an executable file); ignored", "path", path)
		gone = true
	}
	if !gone {
		if problem := untrusted(filepath.Dir(path)); problem != "" {
			m.log.Error("plugin folder refused: other users could change what agenthost runs", "dir", filepath.Dir(path), "plugin", base, "problem", problem)
			gone = true
		} else if problem := untrusted(path); problem != "" {
			m.log.Error("plugin binary refused: other users could change what agenthost runs", "plugin", base, "path", path, "problem", problem)
			gone = true
		}
	}
	for {
		m.mu.Lock()
		p := m.plugins[base]
		if p == nil {
			if gone || m.stopped {
				m.mu.Unlock()
				return
			}
			p = m.newManaged(base, path)
		}
		m.mu.Unlock()
		if p.path != path {
			if !gone {
				m.log.Warn("two plugin folders hold a plugin of the same name; the first one found is used", "plugin", base, "used", p.path, "ignored", path)
			}
			return
		}
		ev := event{kind: evChanged}
		if gone {
			ev.kind = evRemoved
		}
		if p.send(ev) {
			return
		}
		// That plugin's loop ended: it was just removed (look again), or the
		// manager is stopping.
		m.mu.Lock()
		stopped := m.stopped
		m.mu.Unlock()
		if stopped {
			return
		}
	}
}

// current returns the instance serving a plugin now, if any.
func (m *Manager) current(name string) *instance {
	m.mu.Lock()
	p := m.plugins[name]
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inst
}

// crashed is called when a call finds its instance gone.
func (m *Manager) crashed(i *instance) {
	m.mu.Lock()
	p := m.plugins[i.name]
	m.mu.Unlock()
	if p != nil {
		p.send(event{kind: evCrashed, inst: i})
	}
}

// Status is one plugin's state for `agenthost plugins`.
type Status struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"`
	Version   string   `json:"version,omitempty"`
	State     string   `json:"state"`
	PID       int      `json:"pid,omitempty"`
	Services  []string `json:"services,omitempty"`
	Restarts  int      `json:"restarts"`
	LastError string   `json:"last_error,omitempty"`
	SHA256    string   `json:"sha256,omitempty"`
}

// Status lists every plugin, sorted by name.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	ps := make([]*managed, 0, len(m.plugins))
	for _, p := range m.plugins {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.status())
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}
