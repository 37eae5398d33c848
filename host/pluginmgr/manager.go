// Package pluginmgr owns the plugin binaries: it finds them in the
// configured folders, checks that only root or the host's user may change
// them (and their sha256 pins), watches the folders for binaries added,
// replaced or removed, and hands each plugin to a supervise.Supervisor that
// runs its process over hashicorp/go-plugin (start, reload before retire,
// restart with backoff, park, lazy start and idle stop).
package pluginmgr

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/backoff"
	"github.com/agenthost/agenthost/internal/fsperm"
)

// Options configure a Manager.
type Options struct {
	// Plugins is the plugins section of the configuration (config.Default
	// has the defaults; the manager has none of its own).
	Plugins    config.Plugins
	RuntimeDir string // private folder for the plugins' sockets
	// Watch turns hot reload on; `agenthost call` without a daemon runs without it.
	Watch bool
	Log   *slog.Logger
	// Audio is where plugins' sound goes (see plugins.audio); nil: plugins cannot play.
	Audio AudioOut
	// Jail confines every plugin process (config.Config.Jail); the zero
	// Jail hides the packaged daemon's files only.
	Jail sandbox.Jail
}

// settings are Options resolved for use.
type settings struct {
	dirs         []string
	dataDir      string
	autoMTLS     bool
	startTimeout time.Duration
	debounce     time.Duration
	watch        bool
	lazy         func(name string) bool
	cache        descCache
}

// Manager runs the plugins.
type Manager struct {
	o         settings
	audio     *audioHost
	sup       supervise.Options // the template of every plugin's supervisor
	log       *slog.Logger
	socketDir string

	jail    sandbox.Jail
	cfgMu   sync.Mutex              // guards pins, configs, grants and allow, which a reload replaces
	grants  map[string]config.Grant // name -> plugins.sandbox.<name>
	pins    map[string]string       // name -> pinned sha256 digest
	configs map[string]any          // name -> the plugin's config subtree
	allow   []string                // plugins.network.allow

	// incomplete holds the ELF binaries found not whole, by path, as they
	// were when last looked at. Only Run's goroutine uses it.
	incomplete map[string]incompleteFile

	mu      sync.Mutex
	plugins map[string]*plugin // by name
	stopped bool               // Run is ending: no new plugins
	wg      sync.WaitGroup     // supervisors being stopped
}

// plugin is one binary name and the supervisor that runs it.
type plugin struct {
	name string
	path string
	sup  *supervise.Supervisor

	// loadMu makes load the one path to the supervisor: the watcher's look
	// at the binary and a configuration reload's take turns.
	loadMu sync.Mutex

	mu      sync.Mutex
	hash    string       // of the binary last handed to the supervisor
	served  string       // of the binary that last started or was described from the cache
	print   string       // printOf that binary ("" when unknown)
	version string       // from the cached description
	loading *pendingLoad // the last build handed to the supervisor to start
}

// pendingLoad is a build handed to the supervisor; handled is closed once
// the supervisor is done with it (it serves, was described, or failed).
// A build renamed in is hashed once it started (renamed.go): kick starts
// the hashing at once, and hashed is closed once the hash is recorded.
type pendingLoad struct {
	hash    string
	handled <-chan struct{}
	kick    func()
	hashed  <-chan struct{}
}

// settle waits until the hash of the build last renamed in is recorded, so
// that what is handed, served and starting can be compared.
func (p *plugin) settle() {
	p.mu.Lock()
	pl := p.loading
	p.mu.Unlock()
	if pl != nil && pl.hashed != nil {
		pl.kick()
		<-pl.hashed
	}
}

// startingLocked reports whether the build hash was handed to the supervisor
// and is not yet handled; p.mu held.
func (p *plugin) startingLocked(hash string) bool {
	if p.loading == nil || p.loading.hash != hash {
		return false
	}
	select {
	case <-p.loading.handled:
		return false
	default:
		return true
	}
}

// serving returns the build behind the plugin's services as st (its
// supervisor's status) shows them: the running process's, else the one
// last started or described.
func (p *plugin) serving(st supervise.Status) string {
	if st.Info.Build != "" {
		return st.Info.Build
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// New returns a manager that puts plugins' services into reg.
func New(o Options, reg supervise.Registry) *Manager {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := o.Plugins
	s := settings{dirs: p.Dirs, autoMTLS: p.AutoMTLS, startTimeout: p.StartTimeout.D(), debounce: p.Debounce.D(),
		watch: o.Watch, lazy: p.IsLazy}
	// The state folder gives each plugin a data folder and holds the cache
	// of descriptions that lazy plugins are registered from.
	if state := p.StateDirectory(); state != "" {
		s.dataDir = filepath.Join(state, "plugins")
		s.cache = descCache{dir: filepath.Join(state, "plugin-descriptions")}
	}
	log = log.With("component", "plugins")
	return &Manager{o: s, log: log, plugins: map[string]*plugin{}, incomplete: map[string]incompleteFile{}, socketDir: filepath.Join(o.RuntimeDir, "p"), // short: see socketFolder
		pins: p.SHA256, configs: p.Config, grants: p.Sandbox, allow: p.Network.Allow, jail: o.Jail, audio: newAudioHost(o.Audio, p.Audio, log),
		sup: supervise.Options{Kind: "plugin", Registry: reg, StartTimeout: p.StartTimeout.D(), StopGrace: p.StopGrace.D(),
			Restart:    backoff.Backoff{Base: p.Restart.Base.D(), Cap: p.Restart.Cap.D()},
			MaxCrashes: p.Restart.MaxCrashes, CrashWindow: p.Restart.Window.D(), FailedStart: supervise.Broken,
			IdleStop: p.IdleStop.D(), HealthInterval: p.HealthInterval.D()}}
}

// Name implements part.Part.
func (m *Manager) Name() string { return "plugin manager" }

// Run starts every plugin found, reports ready, then watches the folders
// until ctx ends, and stops every plugin before it returns.
func (m *Manager) Run(ctx context.Context, ready func()) error {
	if err := m.sweepSockets(); err != nil {
		return err
	}
	defer m.stopAll()
	var w *fsnotify.Watcher
	if m.o.watch {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			return fmt.Errorf("watching the plugin folders: %w", err)
		}
		defer w.Close()
	}
	var again []string // binaries to look at again once they settle
	for _, dir := range m.o.dirs {
		if w != nil {
			if err := w.Add(dir); err != nil {
				m.log.Warn("cannot watch a plugin folder; plugins added there later need a restart", "dir", dir, "err", err)
			}
		}
		again = append(again, m.scan(dir)...)
	}
	// Wait for the first start of every plugin found, so the first register is whole.
	for _, p := range m.all() {
		select {
		case <-p.sup.Settled():
		case <-ctx.Done():
		}
	}
	ready()
	if w != nil {
		m.watch(ctx, w, again)
	} else {
		<-ctx.Done()
	}
	return nil
}

func (m *Manager) all() []*plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*plugin, 0, len(m.plugins))
	for _, p := range m.plugins {
		out = append(out, p)
	}
	return out
}

// stopAll stops every plugin, all at once, and waits.
func (m *Manager) stopAll() {
	m.mu.Lock()
	m.stopped = true
	all := m.plugins
	m.plugins = map[string]*plugin{}
	m.mu.Unlock()
	for _, p := range all {
		m.stopPlugin(p)
	}
	m.wg.Wait()
	// A build renamed in just before is hashed now, not by its timer
	// (hashAfter) after Run returned.
	for _, p := range all {
		p.settle()
	}
}

func (m *Manager) stopPlugin(p *plugin) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		p.sup.Stop()
	}()
}

// scan looks at every file of a plugin folder. It returns the binaries to
// look at again after the debounce (see changed).
func (m *Manager) scan(dir string) (again []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		m.log.Warn("cannot read a plugin folder", "dir", dir, "err", err)
		return nil
	}
	for _, e := range entries {
		if path := filepath.Join(dir, e.Name()); m.changed(path, false) {
			again = append(again, path)
		}
	}
	return again
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

// watch turns folder events into debounced per-file checks; the paths in
// again are checked once more after the debounce.
func (m *Manager) watch(ctx context.Context, w *fsnotify.Watcher, again []string) {
	timers := map[string]*time.Timer{}
	due := make(chan string, 64)
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	later := func(name string) {
		if t := timers[name]; t != nil {
			t.Reset(m.o.debounce)
			return
		}
		timers[name] = time.AfterFunc(m.o.debounce, func() {
			select {
			case due <- name:
			case <-ctx.Done():
			}
		})
	}
	for _, path := range again {
		later(path)
	}
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
			if ev.Has(fsnotify.Create) && wholeBinary(ev.Name) {
				// Renamed in whole (the documented way to install): no need
				// to wait for it to settle.
				if t := timers[ev.Name]; t != nil {
					t.Stop()
					delete(timers, ev.Name)
				}
				if m.changed(ev.Name, true) {
					later(ev.Name)
				}
				continue
			}
			later(ev.Name)
		case path := <-due:
			delete(timers, path)
			if slices.Contains(m.o.dirs, path) {
				for _, p := range m.scan(path) { // the folder itself changed (its mode, say)
					later(p)
				}
				continue
			}
			if m.changed(path, false) {
				later(path)
			}
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
	if strings.HasPrefix(base, ".") || strings.HasSuffix(base, "~") || strings.HasSuffix(base, ".md") {
		return true
	}
	for _, suffix := range []string{".tmp", "-go-tmp-umask", ".dpkg-new", ".dpkg-tmp", ".dpkg-old", ".dpkg-dist", ".dpkg-bak", ".dpkg-remove"} {
		if strings.HasSuffix(base, suffix) {
			return true
		}
	}
	return false
}

// changed looks at one path after it settled and tells its plugin. It
// reports whether to look at the path again after the debounce: an ELF
// binary that is not whole yet (see incompleteBinary). renamed says the
// binary was renamed in whole (a new file, see load).
func (m *Manager) changed(path string, renamed bool) (again bool) {
	base := filepath.Base(path)
	if ignored(base) {
		return false
	}
	fi, err := os.Stat(path)
	gone := err != nil
	if !gone && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0) {
		m.log.Debug("not a plugin (not an executable file); ignored", "path", path)
		gone = true
	}
	if !gone && isELF(path) {
		if why := missing(path); why != "" {
			return m.incompleteBinary(path, fi, why)
		}
	}
	delete(m.incomplete, path)
	if !gone {
		if problem := untrusted(filepath.Dir(path)); problem != "" {
			m.log.Error("plugin folder refused: other users could change what agenthost runs", "dir", filepath.Dir(path), "plugin", base, "problem", problem)
			gone = true
		} else if problem := untrusted(path); problem != "" {
			m.log.Error("plugin binary refused: other users could change what agenthost runs", "plugin", base, "path", path, "problem", problem)
			gone = true
		}
	}
	m.mu.Lock()
	p := m.plugins[base]
	switch {
	case m.stopped:
		m.mu.Unlock()
		return false
	case p != nil && p.path != path:
		m.mu.Unlock()
		if !gone {
			m.log.Warn("two plugin folders hold a plugin of the same name; the first one found is used", "plugin", base, "used", p.path, "ignored", path)
		}
		return false
	case gone && p != nil:
		// The services leave first: a plugin gone from the status has none.
		m.sup.Registry.RemoveProvider(p.sup)
		delete(m.plugins, base)
		m.mu.Unlock()
		m.stopPlugin(p)
		m.log.Info("plugin removed; its services are gone", "plugin", base)
		return false
	case gone:
		m.mu.Unlock()
		return false
	case p == nil:
		o := m.sup
		o.ID, o.Name, o.Log, o.Lazy = "plugin:"+base, base, m.log.With("plugin", base), m.o.lazy(base)
		p = &plugin{name: base, path: path, sup: supervise.New(o)}
		m.plugins[base] = p
	}
	m.mu.Unlock()
	if st := p.sup.Status().State; st == supervise.StateParked || st == supervise.StateBroken {
		m.log.Info(st+" plugin's binary changed; trying it again", "plugin", base)
	}
	if renamed && m.pin(base) == "" {
		m.loadRenamed(p)
		return false
	}
	m.load(p, false)
	return false
}

// incompleteFile is an ELF binary found not whole: its size and mtime then,
// and whether it was refused with a warning at that size and mtime.
type incompleteFile struct {
	size    int64
	mtime   time.Time
	refused bool
}

// incompleteBinary handles an ELF binary that is not whole (why says what
// is missing): one still being written is looked at again after the
// debounce; one that has not changed (size and mtime) since the last look
// is refused, once, with a warning that says why, until it changes. It
// reports whether to look again.
func (m *Manager) incompleteBinary(path string, fi os.FileInfo, why string) (again bool) {
	prev, seen := m.incomplete[path]
	cur := incompleteFile{size: fi.Size(), mtime: fi.ModTime()}
	unchanged := seen && prev.size == cur.size && prev.mtime.Equal(cur.mtime)
	if m.o.watch && !unchanged {
		m.incomplete[path] = cur
		m.log.Debug("plugin binary still being written; looking again once it has not changed for the debounce", "path", path, "missing", why)
		return true
	}
	if !prev.refused || !unchanged {
		m.log.Warn("plugin binary refused: it is incomplete or damaged and has not changed for "+m.o.debounce.String()+
			"; it is started once it is whole (install by copying to a temporary name, then renaming)",
			"plugin", filepath.Base(path), "path", path, "missing", why)
	}
	cur.refused = true
	m.incomplete[path] = cur
	return false
}

// load hands the binary now at p.path to p's supervisor, unless it is the
// one already serving and its pin allows it, or a start of it is under way
// (again, for a change of settings, starts it again all the same). A build
// that failed to start is tried again: the touch (or the change of
// settings) that follows a fix means "try it now". Every look at a plugin's
// binary goes through here, one at a time.
func (m *Manager) load(p *plugin, again bool) {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.settle()
	b, err := fileBuild(p.path, false)
	hash := b.hash
	if err != nil {
		p.sup.Load(failing(fmt.Errorf("cannot read %s: %w", p.path, err)), nil)
		return
	}
	status := p.sup.Status()
	served := p.serving(status) == hash
	p.mu.Lock()
	handed, starting := p.hash == hash, p.startingLocked(hash)
	p.hash = hash
	p.mu.Unlock()
	pinErr := checkPin(p.name, m.pin(p.name), hash)
	switch st := status.State; {
	case pinErr == nil && served && (st == supervise.StateRunning || st == supervise.StateIdle || st == supervise.StateRestarting),
		handed && st == supervise.StateStarting:
		m.log.Debug("plugin binary touched but unchanged; nothing to do", "plugin", p.name, "state", st)
		return
	case pinErr == nil && starting && !again:
		m.log.Debug("plugin binary touched; a start of this build is under way; nothing to do", "plugin", p.name, "state", st)
		return
	}
	if pinErr != nil {
		p.sup.Load(failing(pinErr), nil)
		return
	}
	name := p.name
	start := func(ctx context.Context) (supervise.Child, error) { return m.startBuild(ctx, p, b) }
	var desc []services.Service
	if m.o.lazy(name) {
		var version string
		var err error
		desc, version, err = m.o.cache.get(name, hash)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn("ignored the cached description of a plugin; describing it again", "plugin", name, "why", err)
		}
		p.mu.Lock()
		p.version = version
		if desc != nil {
			p.served, p.print = hash, b.print
		}
		p.mu.Unlock()
	}
	handled := p.sup.Load(start, desc)
	p.mu.Lock()
	p.loading = &pendingLoad{hash: hash, handled: handled}
	p.mu.Unlock()
}

// startBuild starts p's binary, known to be the build b.
func (m *Manager) startBuild(ctx context.Context, p *plugin, b build) (supervise.Child, error) {
	inst, err := m.start(ctx, p.name, p.path)
	if err != nil {
		return nil, err
	}
	return m.started(inst, p, b)
}

// started records a plugin's new process, of the build b, before it is
// handed to the supervisor.
func (m *Manager) started(inst *instance, p *plugin, b build) (supervise.Child, error) {
	startFault(p.name, "up")
	inst.hash.Store(&b.hash)
	inst.print = b.print
	p.mu.Lock()
	p.version, p.served, p.print = inst.desc.Version, b.hash, b.print
	p.mu.Unlock()
	m.cacheDescription(inst, p, b.hash)
	startFault(p.name, "handing over")
	return inst, nil
}

// cacheDescription records a lazy plugin's description, by its build.
func (m *Manager) cacheDescription(inst *instance, p *plugin, hash string) {
	if !m.o.lazy(p.name) {
		return
	}
	if err := m.o.cache.put(p.name, hash, inst.desc.Version, inst.Services()); err != nil {
		m.log.Warn("cannot cache the plugin's description; it will be started again to describe it", "plugin", p.name, "err", err)
	}
}

// checkPin refuses a binary whose sha256 is not the one the plugin is
// pinned to (pin "" pins nothing).
func checkPin(name, pin, hash string) error {
	if pin != "" && !strings.EqualFold(pin, hash) {
		return fmt.Errorf("binary sha256 %s does not match plugins.sha256.%s (%s); refusing to start it (install the pinned build or update the pin)", hash, name, pin)
	}
	return nil
}

// pin returns the sha256 a plugin is pinned to, "" when none.
func (m *Manager) pin(name string) string {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	return m.pins[name]
}

// grant returns what the owner granted a plugin (plugins.sandbox.<name>).
func (m *Manager) grant(name string) config.Grant {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	return m.grants[name]
}

// pluginConfig returns a plugin's config subtree as a JSON object.
func (m *Manager) pluginConfig(name string) json.RawMessage {
	m.cfgMu.Lock()
	conf, err := json.Marshal(m.configs[name])
	m.cfgMu.Unlock()
	if err != nil || string(conf) == "null" {
		return json.RawMessage(`{}`)
	}
	return conf
}

// failing is a Starter that cannot start: the binary is refused.
func failing(err error) supervise.Starter {
	return func(context.Context) (supervise.Child, error) { return nil, err }
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
	Parks     int      `json:"parks,omitempty"`
	LastError string   `json:"last_error,omitempty"`
	SHA256    string   `json:"sha256,omitempty"`
	// ConfigRejected says that the running process refused the config a
	// reload gave it, and why: it serves with its old one.
	ConfigRejected string `json:"config_rejected,omitempty"`
}

// Status lists every plugin, sorted by name.
func (m *Manager) Status() []Status {
	var out []Status
	for _, p := range m.all() {
		p.settle() // a build renamed in serves before it is hashed
		st := p.sup.Status()
		p.mu.Lock()
		hash, version := p.served, p.version
		if hash == "" {
			hash = p.hash
		}
		p.mu.Unlock()
		if st.Info.Build != "" { // a process serves: its build, not the newest one handed over
			hash = st.Info.Build
		}
		if st.Info.Version != "" {
			version = st.Info.Version
		}
		var rejected string
		if inst, ok := p.sup.Running().(*instance); ok && inst != nil {
			if why := inst.rejected.Load(); why != nil {
				rejected = *why
			}
		}
		out = append(out, Status{Name: p.name, Path: p.path, Version: version, State: st.State, PID: st.Info.PID,
			Services: st.Services, Restarts: st.Restarts, Parks: st.Parks, LastError: st.LastError, SHA256: hash, ConfigRejected: rejected})
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}
