// Package host is the daemon: it wires the link to the voice server, the
// service registry and dispatcher, the providers (built-ins, plugins) and the
// local control socket, and runs them until its context ends.
package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/services"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
	"github.com/agenthost/agenthost/internal/memtrim"
	"github.com/agenthost/agenthost/proto/voice"
)

// Component is a part of the daemon that runs beside the link (host/part).
type Component = part.Part

// Host is a configured daemon.
type Host struct {
	cfg  *config.Config
	log  *slog.Logger
	reg  *services.Registry
	disp *services.Dispatcher
	// local bounds the calls through the control socket (CallLocal) apart
	// from the voice server's.
	local *services.Budget
	link  *link.Link

	// standalone: this process is not the daemon (see NewStandalone).
	standalone bool

	mu         sync.Mutex
	conn       int    // the connection that is up, 0 when down
	registered []byte // the register last sent on conn
	registers  int    // registers sent since start, for status

	plugins    *pluginmgr.Manager
	conv       *conversation.Conversation
	wake       *hostwake.Detector // the wake word's detector; nil when off
	calls      sync.WaitGroup
	work       chan callWork   // to an idle call worker
	workers    sync.WaitGroup  // call workers, which end after shutdown
	callCtx    context.Context // ends at shutdown: results could no longer be sent
	voiceCtx   context.Context // callCtx naming the voice server as the caller, made once
	stopCalls  context.CancelFunc
	components []Component
	frames     []func(voice.Frame) // conversation taps
	observers  []func(CallRecord)  // call observers (metrics)
	trim       *memtrim.Trimmer
	level      *slog.LevelVar      // the logger's level, set by reloads
	mcpSet     *mcpservers.Set     // the MCP servers the configuration names
	mcpSrv     *mcpservers.Servers // runs them

	device        *device.Device // volume, mutes, timers (host/device.go)
	talkSwallowed atomic.Bool    // a talk press that stopped a ringing timer: its release is ignored
}

// idleTrim: after this long without a call the daemon hands back the memory
// that start-up and its last calls needed (internal/memtrim).
const idleTrim = 5 * time.Second

// CallRecord is one call from the voice server, as observers see it.
type CallRecord struct {
	Method  string
	Took    time.Duration // dispatch, the provider, and queueing the result
	Success bool
}

// OnCall adds an observer of every call from the voice server (metrics).
// Add observers before Run; they must not block.
func (h *Host) OnCall(f func(CallRecord)) { h.observers = append(h.observers, f) }

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
	h.callCtx, h.stopCalls = context.WithCancel(context.Background())
	h.voiceCtx = services.WithCaller(h.callCtx, services.CallerVoiceServer)
	h.work = make(chan callWork)
	h.mcpSet = mcpservers.NewSet(cfg, log)
	mcp := h.mcpSet.Configs()
	h.reg = services.NewRegistry(services.RegistryOptions{Prefixes: mcpservers.Prefixes(cfg, mcp), Order: mcpservers.Order(cfg, mcp),
		MaxDescription: int(cfg.Services.MaxDescription), MaxRegister: int(cfg.Services.MaxRegister), Log: log.With("component", "registry"),
		Policy: services.Policy{Allow: cfg.Services.Allow, Deny: cfg.Services.Deny}})
	limits := dispatchLimits(cfg.Services)
	limits.Log = log.With("component", "dispatch")
	h.disp = services.NewDispatcher(h.reg, limits)
	h.local = services.NewBudget(localBudget(cfg.Services))
	if cfg.Services.Builtins {
		if err := h.reg.Put(builtin.New(time.Now)); err != nil {
			return nil, fmt.Errorf("built-in services: %w", err)
		}
	}
	if err := h.newDevice(); err != nil {
		return nil, err
	}
	h.link = link.New(link.Options{Server: cfg.Server, Token: cfg.Token, Log: log}, (*linkHandler)(h))
	return h, nil
}

// MCPServers returns the part that runs the configured MCP servers.
func (h *Host) MCPServers() Component {
	if h.mcpSrv == nil {
		h.mcpSrv = mcpservers.New(h.cfg, h.mcpSet, h.reg, h.log, Version)
	}
	return h.mcpSrv
}

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
		for {
			select {
			case <-h.reg.Changes():
				h.sendRegister(0)
			case <-runCtx.Done():
				return
			}
		}
	}()
	h.log.Info("agenthost started", "server", h.cfg.Server.Address, "services", len(h.reg.Entries()))
	if !h.cfg.Server.TLS && !loopback(h.cfg.Server.Address) {
		h.log.Warn("the link to the voice server is not encrypted and the server is not on this machine: the token and what is said cross the network in the clear; set server.tls: true if the server offers TLS",
			"server", h.cfg.Server.Address)
	}
	h.trim = memtrim.Start(memtrim.Options{GCPercent: 50, MemoryLimit: 64 << 20, IdleAfter: idleTrim})
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
	h.stopCalls()
	h.calls.Wait()
	h.workers.Wait()
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

// sendRegister sends the whole service set on the current connection unless
// that connection already has exactly this set. conn 0 means "whatever is up".
func (h *Host) sendRegister(conn int) {
	h.mu.Lock() // held while reading the set, so an older set never overtakes a newer one
	defer h.mu.Unlock()
	payload := h.reg.Canonical()
	if conn == 0 {
		conn = h.conn
	}
	if conn == 0 || conn != h.conn || bytes.Equal(payload, h.registered) {
		return
	}
	if err := h.link.Send(voice.MCPFrame(payload)); err != nil {
		h.log.Warn("could not send the register message", "err", err)
		return
	}
	h.registered = payload
	h.registers++
	h.log.Info("registered services with the voice server", "conn", conn, "services", len(h.reg.Names()))
}

// callWork is one call for a worker.
type callWork struct {
	conn int
	c    voice.Call
}

// workerIdle is how long a call worker waits for another call.
const workerIdle = 10 * time.Second

// runCall hands a call to an idle worker, or to a new one. A worker serves
// call after call: its stack keeps the depth a call needs (gRPC's is deep),
// which a goroutine per call grew anew each time; in the profile that
// copying was a third of the host's own work per plugin call.
func (h *Host) runCall(conn int, c voice.Call) {
	select {
	case h.work <- callWork{conn, c}:
	default:
		h.workers.Add(1)
		go h.worker(callWork{conn, c})
	}
}

func (h *Host) worker(w callWork) {
	defer h.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		h.handleCall(w.conn, w.c)
		idle.Reset(workerIdle)
		select {
		case w = <-h.work:
		case <-idle.C:
			return
		case <-h.callCtx.Done():
			return
		}
	}
}

// handleCall runs one MCP call and answers it with exactly one result.
func (h *Host) handleCall(conn int, c voice.Call) {
	start := time.Now()
	out := h.disp.Dispatch(h.voiceCtx, c)
	h.answer(conn, c, out)
	took := time.Since(start)
	h.trim.Busy()
	for _, f := range h.observers {
		f(CallRecord{Method: c.Method, Took: took, Success: out.Success})
	}
	// Debug: a line per call would be most of a call's cost on a Pi; the
	// dispatcher logs failures at info, and metrics count every call.
	h.log.Debug("call answered", "method", c.Method, "call_id", c.CallID, "success", out.Success, "took", took.Round(time.Microsecond))
}

func (h *Host) answer(conn int, c voice.Call, out voice.Outcome) {
	defer h.calls.Done()
	payload, err := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: c.CallID, Result: out})
	if err != nil {
		payload, _ = voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: c.CallID, Result: voice.Outcome{Error: "the result could not be encoded: " + err.Error()}})
	}
	if up, cur := h.link.Up(); !up || cur != conn {
		h.log.Warn("the result of a call was lost: the connection it came on has closed", "method", c.Method, "call_id", c.CallID)
		return
	}
	if err := h.link.Send(voice.MCPFrame(payload)); err != nil {
		h.log.Warn("could not send a call result", "method", c.Method, "call_id", c.CallID, "err", err)
	}
}

// linkHandler is the host's face toward the link.
type linkHandler Host

func (lh *linkHandler) Up(conn int) {
	h := (*Host)(lh)
	h.mu.Lock()
	h.conn, h.registered = conn, nil
	h.mu.Unlock()
	h.sendRegister(conn)
	if h.conv != nil {
		h.conv.LinkUp()
	}
	h.device.LinkUp() // what the server was not told while away (a timer rang)
}

func (lh *linkHandler) Down(conn int, err error) {
	h := (*Host)(lh)
	h.mu.Lock()
	if h.conn == conn {
		h.conn, h.registered = 0, nil
	}
	h.mu.Unlock()
	if h.conv != nil {
		h.conv.LinkDown(err)
	}
}

func (lh *linkHandler) Frame(conn int, f voice.Frame) {
	h := (*Host)(lh)
	if f.Type == voice.TypeMCP {
		h.mcp(conn, f)
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

func (h *Host) mcp(conn int, f voice.Frame) {
	v, err := voice.ParseMCP(f.Payload)
	if err != nil {
		h.log.Warn("ignored an MCP message the host cannot read", "err", err)
		// A call readable enough to carry a call_id still gets its one answer.
		var m struct {
			Type string `json:"type"`
			Data struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		if json.Unmarshal(f.Payload, &m) == nil && m.Type == voice.MCPCall && m.Data.CallID != "" {
			h.calls.Add(1)
			go h.answer(conn, voice.Call{CallID: m.Data.CallID}, voice.Outcome{Error: "malformed call: " + err.Error()})
		}
		return
	}
	switch m := v.(type) {
	case *voice.Call:
		h.calls.Add(1)
		h.runCall(conn, *m)
	default:
		h.log.Info("ignored an MCP message of a kind the server does not send", "kind", fmt.Sprintf("%T", m))
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
	h.mu.Lock()
	s := Status{Connected: up, Conn: conn, Registers: h.registers, InFlight: h.disp.InFlight(), Conflicts: h.reg.Conflicts(), LeftOut: h.reg.LeftOut(), Process: processNow()}
	h.mu.Unlock()
	s.Link = h.link.State()
	for _, e := range h.reg.Entries() {
		s.Services = append(s.Services, e.Name)
	}
	if h.mcpSrv != nil {
		s.MCP = h.mcpSrv.Status()
	}
	s.WakeWord = h.wakeStatus()
	ds := h.device.Status()
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
