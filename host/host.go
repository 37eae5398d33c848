// Package host is the daemon: it wires the link to the voice server, the
// service registry and dispatcher, the providers (built-ins, plugins) and the
// local control socket, and runs them until its context ends.
package host

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/speaker"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
	"github.com/agenthost/agenthost/proto/voice"
)

// Component is a part of the daemon that runs beside the link (host/part).
type Component = part.Part

// Host is a configured daemon.
type Host struct {
	cfg   *config.Config
	log   *slog.Logger
	calls *calls.Calls // the registry, the dispatcher, the register, the calls
	reg   *services.Registry
	disp  *services.Dispatcher
	link  *link.Link

	// standalone: this process is not the daemon (see NewStandalone).
	standalone bool

	mu sync.Mutex

	plugins    *pluginmgr.Manager
	conv       *conversation.Conversation
	wake       *hostwake.Detector // the wake word's detector; nil when off
	components []Component
	frames     []func(voice.Frame) // conversation taps
	level      *slog.LevelVar      // the logger's level, set by reloads
	mcpSet     *mcpservers.Set     // the MCP servers the configuration names
	mcpSrv     *mcpservers.Servers // runs them

	speaker *speaker.Speaker // the device: volume, mutes, timers, buttons
}

// CallRecord is one call from the voice server, as observers see it.
type CallRecord = calls.Record

// OnCall adds an observer of every call from the voice server (metrics).
// Add observers before Run; they must not block.
func (h *Host) OnCall(f func(CallRecord)) { h.calls.OnCall(f) }

// New builds a host from a loaded configuration.
func New(cfg *config.Config, log *slog.Logger) (*Host, error) {
	return newHost(cfg, log, false)
}

// NewStandalone builds the host of a process that is not the daemon
// (`agenthost mcp` or `agenthost call` with no daemon running): it runs
// the plugins and MCP servers, but the device and its state are the
// daemon's alone, so its device services touch no state and answer that
// the daemon is not running (device.Options.Standalone).
func NewStandalone(cfg *config.Config, log *slog.Logger) (*Host, error) {
	return newHost(cfg, log, true)
}

func newHost(cfg *config.Config, log *slog.Logger, standalone bool) (*Host, error) {
	if _, err := cfg.Plugins.EnsureRuntimeDirectory(); err != nil {
		return nil, err
	}
	if err := cfg.Plugins.CheckStateDirectory(); err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, log: log, standalone: standalone}
	h.mcpSet = mcpservers.NewSet(cfg, log)
	ranks := func(cfg *config.Config) (map[string]string, []string) {
		mcp := h.mcpSet.Configs()
		return mcpservers.Prefixes(cfg, mcp), mcpservers.Order(cfg, mcp)
	}
	var err error
	if h.calls, err = calls.New(cfg, log, ranks); err != nil {
		return nil, err
	}
	h.reg, h.disp = h.calls.Registry(), h.calls.Dispatcher()
	if h.speaker, err = speaker.New(speaker.Options{Config: cfg, Log: log, Registry: h.reg, Standalone: standalone, Current: h.Config,
		Up:           func() bool { up, _ := h.link.Up(); return up },
		Conversation: func() speaker.Conversation { return h.conversation() },
		WakeOn:       func() bool { return h.wakeStatus().On }}); err != nil {
		return nil, err
	}
	h.link = link.New(link.Options{Server: cfg.Server, Token: cfg.Token, Log: log}, (*linkHandler)(h))
	h.calls.SetLink(h.link)
	return h, nil
}

// MCPServers returns the part that runs the configured MCP servers.
func (h *Host) MCPServers() Component {
	if h.mcpSrv == nil {
		h.mcpSrv = mcpservers.New(h.cfg, h.mcpSet, h.reg, h.log, Version)
	}
	return h.mcpSrv
}

// conversation is the conversation, nil before Conversation made it.
func (h *Host) conversation() speaker.Conversation {
	if h.conv == nil {
		return nil
	}
	return h.conv
}

// Device is the part that runs the timers; add it to run them.
func (h *Host) Device() Component { return h.speaker }

// MicButton returns the part of the microphone's privacy button, or nil.
func (h *Host) MicButton() Component { return h.speaker.MicButton() }

// Triggers returns the push-to-talk parts the configuration asks for.
func (h *Host) Triggers() []Component { return h.speaker.Triggers() }

// Plugins returns the plugin manager built from the configuration, creating
// it on first use; watch turns on hot reload. Add it to run it.
func (h *Host) Plugins(watch bool) *pluginmgr.Manager {
	if h.plugins == nil {
		p := h.cfg.Plugins
		h.plugins = pluginmgr.New(pluginmgr.Options{Plugins: p, RuntimeDir: p.RuntimeDirectory(), Watch: watch, Log: h.log}, h.reg)
	}
	return h.plugins
}

// Registry is the merged set of services; providers are added to it.
func (h *Host) Registry() *services.Registry { return h.reg }

// Dispatcher runs calls; the control socket's `call` goes through it too.
func (h *Host) Dispatcher() *services.Dispatcher { return h.disp }

// Link is the connection to the voice server.
func (h *Host) Link() *link.Link { return h.link }

// Config is the configuration the host runs with (the last one applied).
func (h *Host) Config() *config.Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// Log is the host's logger.
func (h *Host) Log() *slog.Logger { return h.log }

// Add registers a component to run with the host. Components start in the
// order added, before the link connects, so the first register has what
// they have ready (an MCP server that answers later joins with a new one).
func (h *Host) Add(c Component) { h.components = append(h.components, c) }

// OnFrame adds a tap that sees every conversation frame from the server
// (TEXT, AUDIO, END, EMOJI, LISTEN, STATUS of a task).
func (h *Host) OnFrame(f func(voice.Frame)) { h.frames = append(h.frames, f) }

// Run starts the components, then the link, and blocks until ctx ends. It
// returns nil after a clean shutdown.
func (h *Host) Run(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, len(h.components)+1)
	if err := part.Start(ctx, runCtx, h.components, &wg, errc); err != nil {
		cancel()
		wg.Wait()
		if ctx.Err() != nil {
			h.log.Info("agenthost stopped during start-up")
			return nil
		}
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.calls.Serve(runCtx)
	}()
	h.log.Info("agenthost started", "server", h.cfg.Server.Address, "services", len(h.reg.Entries()))
	if !h.cfg.Server.TLS && !loopback(h.cfg.Server.Address) {
		h.log.Warn("the link to the voice server is not encrypted and the server is not on this machine: the token and what is said cross the network in the clear; set server.tls: true if the server offers TLS",
			"server", h.cfg.Server.Address)
	}
	linkCtx, stopLink := context.WithCancel(ctx)
	defer stopLink()
	linkDone := make(chan struct{})
	go func() {
		defer close(linkDone)
		h.link.Run(linkCtx)
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		h.log.Error("a component failed; shutting down", "err", err)
	}
	stopLink()
	<-linkDone // the link says DISCONNECT and returns
	h.calls.Stop()
	cancel()
	wg.Wait()
	h.log.Info("agenthost stopped")
	return err
}

// loopback reports whether address (host:port) names this machine.
func loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// linkHandler is the host's face toward the link.
type linkHandler Host

func (lh *linkHandler) Up(conn int) {
	h := (*Host)(lh)
	h.calls.LinkUp(conn)
	if h.conv != nil {
		h.conv.LinkUp()
	}
	h.speaker.Device().LinkUp() // what the server was not told while away (a timer rang)
}

func (lh *linkHandler) Down(conn int, err error) {
	h := (*Host)(lh)
	h.calls.LinkDown(conn)
	if h.conv != nil {
		h.conv.LinkDown(err)
	}
}

func (lh *linkHandler) Frame(conn int, f voice.Frame) {
	h := (*Host)(lh)
	if f.Type == voice.TypeMCP {
		h.calls.Frame(conn, f)
		return
	}
	// What was said is the user's: debug only. Turn boundaries are logged
	// at info by the conversation.
	switch f.Type {
	case voice.TypeText:
		h.log.Debug("server text", "task", f.Task, "text", string(f.Payload))
	case voice.TypeEmoji:
		h.log.Debug("emoji", "task", f.Task, "payload", string(f.Payload))
	}
	if h.conv != nil {
		h.conv.Frame(f)
	}
	for _, tap := range h.frames {
		tap(f)
	}
}

// Status is a summary for `agenthost status` and the control socket.
type Status struct {
	Connected bool                `json:"connected"`
	Conn      int                 `json:"connection"`
	Link      link.State          `json:"link"`
	Registers int                 `json:"registers_sent"`
	Services  []string            `json:"services"`
	Conflicts []string            `json:"conflicts,omitempty"`
	LeftOut   []string            `json:"left_out,omitempty"` // services over services.max_register
	InFlight  int                 `json:"calls_in_flight"`
	MCP       []mcpservers.Status `json:"mcp_servers,omitempty"`
	// WakeWord says whether the wake word is on, and why not.
	WakeWord hostwake.Status `json:"wake_word"`
	Process  Process         `json:"process"`

	// Device is the speaker's own state (host/device).
	Device *device.Status `json:"device,omitempty"`
}

// Process is what the daemon's own process holds, for watching it over time.
type Process struct {
	PID        int   `json:"pid"`
	Goroutines int   `json:"goroutines"`
	RSSBytes   int64 `json:"rss_bytes"`
	OpenFDs    int   `json:"open_fds"`
}

func processNow() Process {
	p := Process{PID: os.Getpid(), Goroutines: runtime.NumGoroutine()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, rss int64
		if _, err := fmt.Sscan(string(b), &size, &rss); err == nil {
			p.RSSBytes = rss * int64(os.Getpagesize())
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.OpenFDs = len(fds) - 1 // the one reading the folder
	}
	return p
}

// Status reports the host's state.
func (h *Host) Status() Status {
	up, conn := h.link.Up()
	s := Status{Connected: up, Conn: conn, Registers: h.calls.Registers(), InFlight: h.disp.InFlight(), Conflicts: h.reg.Conflicts(), LeftOut: h.reg.LeftOut(), Process: processNow()}
	s.Link = h.link.State()
	for _, e := range h.reg.Entries() {
		s.Services = append(s.Services, e.Name)
	}
	if h.mcpSrv != nil {
		s.MCP = h.mcpSrv.Status()
	}
	s.WakeWord = h.wakeStatus()
	ds := h.speaker.Device().Status()
	s.Device = &ds
	return s
}

// RunProviders starts the components that provide services (everything Add
// was given), runs f, and stops them: `agenthost call` without a daemon.
func (h *Host) RunProviders(ctx context.Context, f func(ctx context.Context)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if err := part.Start(ctx, ctx, h.components, &wg, make(chan error, len(h.components))); err != nil {
		return err
	}
	if h.mcpSrv != nil {
		h.mcpSrv.Settle(ctx) // a one-off call has no later register to wait for
	}
	f(ctx)
	return nil
}
