package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/preflight"
	"github.com/agenthost/agenthost/internal/proctree"
	"github.com/agenthost/agenthost/internal/sandbox"
)

func init() {
	commands["run"] = command{"run the daemon", cmdRun}
}

func cmdRun(e *env, args []string) error {
	fs := e.flags("run")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	// SIGHUP is a reload (systemctl reload), never the end of the daemon,
	// even before the daemon is ready to reload.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	level := new(slog.LevelVar)
	log := newLogger(cfg, e.stderr, level)
	pluginmgr.RouteStandardLog(log.With("component", "go-plugin"))
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	if err := startChecks(cfg, log); err != nil {
		return err
	}
	adoptOrphans(log)
	if err := sandbox.DenyInspection(); err != nil {
		log.Warn("children of the daemon's user may inspect it: " + err.Error())
	}
	defer killLeftovers(log)
	host.Version = version
	// The daemon is the composition in host.New; here only what the
	// command line adds: the MCP endpoint's token, the test providers, and
	// the configuration's reloader.
	o := host.Options{Watch: true, Level: level, Version: version}
	if serve := cfg.MCP.Serve; serve.Listen != "" {
		token, err := serve.BearerToken()
		if err != nil {
			return &exitError{exitConfig, err}
		}
		mo := mcpHTTPOptions(serve, token)
		o.MCP = &mo
	}
	h, err := host.New(cfg, log, o)
	if err != nil {
		return err
	}
	if err := addTestProviders(h); err != nil {
		return err
	}
	h.Add(reloader{e: e, h: h, hup: hup})
	ctx, stop := signalContext()
	defer stop()
	return h.Run(ctx)
}

// startChecks logs what host/preflight finds in cfg, as `agenthost check`
// prints it; a fatal finding is a configuration error (exit 78).
func startChecks(cfg *config.Config, log *slog.Logger) error {
	var bad []string
	for _, f := range preflight.Run(context.Background(), cfg, false) {
		if f.Fatal {
			bad = append(bad, f.Msg)
			continue
		}
		log.Log(context.Background(), f.Level, f.Msg)
	}
	if len(bad) > 0 {
		return &exitError{exitConfig, fmt.Errorf("the configuration has problems:\n%s", strings.Join(bad, "\n"))}
	}
	return nil
}

// adoptOrphans makes this process the subreaper of what it starts: a
// plugin's or MCP server's orphaned descendant (a daemon's setsid
// grandchild) is adopted and reaped here, not by init, and killLeftovers
// finds it at exit.
func adoptOrphans(log *slog.Logger) {
	if err := proctree.BecomeSubreaper(); err != nil {
		log.Warn("orphans of plugins and MCP servers go to init; those that drop agenthost's tag from their environment may outlive them", "err", err)
	}
}

// killLeftovers kills every process still under this one at exit.
func killLeftovers(log *slog.Logger) {
	if n := proctree.KillDescendants(); n > 0 {
		log.Warn("killed processes that plugins, MCP servers or hooks left running", "processes", n)
	}
}

// addTestProviders is replaced in binaries built with -tags testkit.
var addTestProviders = func(*host.Host) error { return nil }

// reloader loads the configuration again on SIGHUP (systemctl reload) and
// when the file, or the file named by mcp.servers_file, changes, and applies
// it; a configuration with problems is refused with the same messages as at
// start-up, and the running one stays.
type reloader struct {
	e   *env
	h   *host.Host
	hup chan os.Signal
}

func (reloader) Name() string { return "configuration reloader" }

func (r reloader) Run(ctx context.Context, ready func()) error {
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if path := r.h.Config().Path; path != "" {
		// Watching before ready: an edit made once the daemon says it is
		// up is never missed.
		fw, err := config.WatchFile(path)
		if err != nil {
			r.h.Log().Warn("the configuration file is not watched; use systemctl reload (SIGHUP) after editing it", "err", err)
		} else {
			go fw.Run(ctx, notify)
		}
	}
	servers := &followedFile{what: "the MCP servers file (mcp.servers_file)", log: r.h.Log(), notify: notify}
	defer servers.follow(ctx, "")
	servers.follow(ctx, r.h.Config().MCP.ServersFile)
	ready()
	for {
		var why string
		select {
		case <-ctx.Done():
			return nil
		case <-r.hup:
			why = "SIGHUP"
		case <-changed:
			why = "the file changed"
		}
		r.reload(why, func(next *config.Config) { servers.follow(ctx, next.MCP.ServersFile) })
	}
}

// reload loads the configuration and, unless it is refused, calls accepted
// with it, then applies it.
func (r reloader) reload(why string, accepted func(*config.Config)) {
	daemon.SdNotify(false, daemon.SdNotifyReloading)
	defer daemon.SdNotify(false, daemon.SdNotifyReady)
	log := r.h.Log()
	log.Info("reloading the configuration", "because", why)
	next, err := r.e.loadConfig()
	if err != nil {
		log.Error("the configuration was not reloaded; the running one stays. Fix the file and reload again", "err", err)
		return
	}
	for _, w := range next.Warnings {
		log.Warn("configuration: " + w)
	}
	accepted(next)
	r.h.Apply(next)
}

// followedFile watches a file whose name a reload may change: follow starts
// watching the new name (before the reload reads it, so that no edit after
// that is missed) and stops watching the old.
type followedFile struct {
	what   string
	log    *slog.Logger
	notify func()
	path   string
	cancel context.CancelFunc
}

func (f *followedFile) follow(ctx context.Context, path string) {
	if path == f.path {
		return
	}
	if f.cancel != nil {
		f.cancel()
		f.cancel = nil
	}
	f.path = path
	if path == "" {
		return
	}
	fw, err := config.WatchFile(path)
	if err != nil {
		f.log.Warn(f.what+" is not watched; use systemctl reload (SIGHUP) after editing it", "err", err)
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	go fw.Run(wctx, f.notify)
}
