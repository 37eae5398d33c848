// Package mcpservers is the daemon's part that runs the MCP servers the
// configuration names (mcp.servers, mcp.servers_file) as providers, and the
// registry's prefixes and order that follow from them.
package mcpservers

import (
	"github.com/agenthost/agenthost/internal/sandbox"
	"path/filepath"

	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/backoff"
)

// configs are the MCP servers the configuration asks for: mcp.servers and
// file, the servers of mcp.servers_file (the YAML wins a name that both
// have), with ${VAR}s expanded. The warnings say what was ignored or unset.
func configs(cfg *config.Config, file map[string]mcpclient.ServerConfig) (map[string]mcpclient.ServerConfig, []string) {
	out := map[string]mcpclient.ServerConfig{}
	var warnings []string
	for name, s := range file {
		out[name] = s
	}
	for name, s := range cfg.MCP.Servers {
		if _, both := out[name]; both {
			warnings = append(warnings, fmt.Sprintf("mcp server %q is in mcp.servers and in mcp.servers_file; mcp.servers wins", name))
		}
		out[name] = mcpclient.ServerConfig{Type: s.Type, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL,
			Headers: s.Headers, Disabled: s.Disabled, Timeout: mcpclient.Duration(s.Timeout), AllowedTools: s.AllowedTools,
			ExcludedTools: s.ExcludedTools, Prefix: s.Prefix, Roots: s.Roots,
			Sandbox: mcpclient.Grant{Read: s.Sandbox.Read, Write: s.Sandbox.Write}}
	}
	for name, s := range out {
		s, w := s.Expand(name)
		out[name] = s
		warnings = append(warnings, w...)
	}
	return out, warnings
}

// Prefixes are services.prefixes and each MCP server's prefix
// (under its provider ID, mcp:<name>).
func Prefixes(cfg *config.Config, servers map[string]mcpclient.ServerConfig) map[string]string {
	out := map[string]string{}
	for k, v := range cfg.Services.Prefixes {
		out[k] = v
	}
	for name, s := range servers {
		if s.Prefix != "" {
			out[mcpclient.ProviderID(name)] = s.Prefix
		}
	}
	return out
}

// Servers runs the configured MCP servers as providers, one supervisor
// each (the plugins' life cycle: a stdio server that exits is restarted
// with backoff and parked; an HTTP server that is down is retried for ever,
// its services out of the register meanwhile).
type Servers struct {
	jail    sandbox.Jail // every stdio server's, from the start's configuration
	set     *Set
	reg     *services.Registry
	log     *slog.Logger
	version string

	mu      sync.Mutex
	cfg     *config.Config
	running map[string]*mcpServer
	stopped bool
}

type mcpServer struct {
	sup  *supervise.Supervisor
	conf mcpclient.ServerConfig
	http bool
}

// Status is one MCP server for `agenthost status` and metrics.
type Status struct {
	Name      string            `json:"name"`
	Transport string            `json:"transport"`
	State     string            `json:"state"`
	Tools     []string          `json:"tools,omitempty"`
	Restarts  int               `json:"restarts"`
	LastError string            `json:"last_error,omitempty"`
	Session   *mcpclient.Status `json:"session,omitempty"` // tools left out, resources, prompts
}

// New returns the part that runs set's servers, which put their services
// in reg; version is the daemon's, told to each server.
func New(cfg *config.Config, set *Set, reg *services.Registry, log *slog.Logger, version string) *Servers {
	return &Servers{set: set, reg: reg, log: log, version: version, cfg: cfg, jail: cfg.Jail(), running: map[string]*mcpServer{}}
}

// home is a stdio server's own folder, under the state folder ("" without one).
func (m *Servers) home(cfg *config.Config, name string) string {
	if d := cfg.Plugins.StateDirectory(); d != "" {
		return filepath.Join(d, "mcp", name)
	}
	return ""
}

// Name implements part.Part.
func (m *Servers) Name() string { return "MCP servers" }

// Run starts the servers and reports ready at once, without waiting for
// them: the link connects and registers what is ready, and a server that
// answers later joins with a new register. It stops them all when ctx ends.
func (m *Servers) Run(ctx context.Context, ready func()) error {
	m.apply(m.set.Configs(), nil)
	ready()
	<-ctx.Done()
	m.mu.Lock()
	m.stopped = true
	all := m.running
	m.running = map[string]*mcpServer{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); s.sup.Stop() }()
	}
	wg.Wait()
	return nil
}

// Reload applies the servers of a new configuration (mcp.servers,
// mcp.servers_file) and tries again one that could not run when its
// services prefix changed.
func (m *Servers) Reload(prev, next *config.Config, changed part.Changes) {
	m.mu.Lock()
	m.cfg = next
	m.mu.Unlock()
	if changed.Touched("mcp.servers", "mcp.servers_file", "services.prefixes") {
		m.apply(m.set.Configs(), m.set.PrefixChanged)
	}
}

// Settle waits until each server has come up or failed, within
// min(mcp.start_timeout, 10 s), or until ctx ends: for a one-off run without
// a daemon (`agenthost call`), which has no later register to wait for.
func (m *Servers) Settle(ctx context.Context) {
	m.mu.Lock()
	start := m.cfg.MCP.StartTimeout.D()
	m.mu.Unlock()
	deadline := time.After(min(start, 10*time.Second))
	for _, s := range m.all() {
		select {
		case <-s.sup.Settled():
		case <-deadline:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (m *Servers) all() []*mcpServer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*mcpServer, 0, len(m.running))
	for _, s := range m.running {
		out = append(out, s)
	}
	return out
}

// apply runs exactly the enabled servers of confs: new ones start, removed
// ones stop, changed ones are loaded again (the old session serves until the
// new one is up), and an unchanged one that could not run (broken, parked)
// is tried again when also reports another of its inputs changed (its
// services prefix). also may be nil.
func (m *Servers) apply(confs map[string]mcpclient.ServerConfig, also func(id string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cfg := m.cfg
	if m.stopped {
		return
	}
	for name, s := range m.running {
		if c, ok := confs[name]; !ok || c.Disabled || isHTTP(c) != s.http {
			delete(m.running, name)
			go s.sup.Stop()
			m.log.Info("mcp server stopped: it left the configuration (or changed transport)", "mcp", name)
		}
	}
	for name, c := range confs {
		if c.Disabled {
			continue
		}
		start, err := mcpclient.NewStarter(mcpclient.Options{Name: name, Server: c, Log: m.log, Version: m.version, Jail: m.jail, Home: m.home(cfg, name),
			StartTimeout: cfg.MCP.StartTimeout.D(), KillGrace: cfg.Plugins.StopGrace.D()})
		if err != nil {
			m.log.Error("mcp server not started: its configuration is wrong", "mcp", name, "err", err)
			continue
		}
		s := m.running[name]
		switch {
		case s == nil:
			s = &mcpServer{sup: supervise.New(m.supervision(cfg, name, isHTTP(c))), conf: c, http: isHTTP(c)}
			m.running[name] = s
		case reflect.DeepEqual(s.conf, c):
			if st := s.sup.Status().State; also == nil || !also(mcpclient.ProviderID(name)) ||
				(st != supervise.StateBroken && st != supervise.StateParked) {
				continue
			}
			m.log.Info("the settings of an mcp server that could not run changed; trying it again", "mcp", name)
		default:
			s.conf = c
			m.log.Info("mcp server configuration changed; connecting again", "mcp", name)
		}
		s.sup.Load(start, nil)
	}
}

func (m *Servers) supervision(cfg *config.Config, name string, http bool) supervise.Options {
	p := cfg.Plugins
	o := supervise.Options{ID: mcpclient.ProviderID(name), Kind: "MCP server", Name: name, Registry: m.reg,
		Log: m.log.With("mcp", name), StartTimeout: cfg.MCP.StartTimeout.D(), StopGrace: p.StopGrace.D(),
		Restart:    backoff.Backoff{Base: p.Restart.Base.D(), Cap: p.Restart.Cap.D()},
		MaxCrashes: p.Restart.MaxCrashes, CrashWindow: p.Restart.Window.D(), FailedStart: supervise.Crash,
		UnregisterWhileDown: true, HealthInterval: p.HealthInterval.D()}
	if http {
		o.FailedStart = supervise.Retry
	}
	return o
}

func isHTTP(c mcpclient.ServerConfig) bool { return c.URL != "" }

// Status lists the servers, sorted by name.
func (m *Servers) Status() []Status {
	m.mu.Lock()
	names := make([]string, 0, len(m.running))
	for name := range m.running {
		names = append(names, name)
	}
	running := m.running
	m.mu.Unlock()
	sort.Strings(names)
	out := make([]Status, 0, len(names))
	for _, name := range names {
		s := running[name]
		st := s.sup.Status()
		ms := Status{Name: name, Transport: mcpclient.TransportStdio, State: st.State, Tools: st.Services, Restarts: st.Restarts, LastError: st.LastError}
		if s.http {
			ms.Transport = mcpclient.TransportStreamable
		}
		if sess, ok := s.sup.Running().(interface{ Status() mcpclient.Status }); ok {
			ss := sess.Status()
			ms.Transport, ms.Session = ss.Transport, &ss
		}
		out = append(out, ms)
	}
	return out
}
