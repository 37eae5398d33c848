// Package calls is the daemon's part that answers for its services: the
// registry and the dispatcher (with services.* as their limits and the
// built-ins in them), the register sent to the voice server on each
// connection and on each change of the set, the voice server's calls (a
// pool of workers, one answer each) and the local ones (the control socket).
package calls

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/memtrim"
	"github.com/agenthost/agenthost/proto/voice"
)

// Link is what the calls need of the link to the voice server.
type Link interface {
	Send(f voice.Frame) error
	Up() (bool, int)
}

// Ranks are the registry's prefixes and order of providers for a
// configuration (they follow the MCP servers it names).
type Ranks func(cfg *config.Config) (prefixes map[string]string, order []string)

// Record is one call, as observers see it: the voice server's, or one
// through the control socket (the owner's CLI, an MCP client).
type Record struct {
	Method  string
	Caller  services.Caller
	Took    time.Duration // dispatch, the provider, and (the voice server's) queueing the result
	Success bool
}

// Calls is the registry, the dispatcher and the calls through them.
type Calls struct {
	log  *slog.Logger
	reg  *services.Registry
	disp *services.Dispatcher
	// local bounds the calls through the control socket (Local) apart
	// from the voice server's.
	local *services.Budget
	link  Link
	ranks Ranks

	mu         sync.Mutex
	conn       int    // the connection that is up, 0 when down
	registered []byte // the register last sent on conn
	registers  int    // registers sent since start, for status

	calls     sync.WaitGroup
	work      chan callWork   // to an idle call worker
	workers   sync.WaitGroup  // call workers, which end after shutdown
	callCtx   context.Context // ends at shutdown: results could no longer be sent
	voiceCtx  context.Context // callCtx naming the voice server as the caller, made once
	stopCalls context.CancelFunc
	observers []func(Record)
	trim      atomic.Pointer[memtrim.Trimmer]
}

// New builds the registry (with the built-ins when services.builtins is
// on) and the dispatcher from cfg.
func New(cfg *config.Config, log *slog.Logger, ranks Ranks) (*Calls, error) {
	prefixes, order := ranks(cfg)
	c := &Calls{log: log, ranks: ranks, work: make(chan callWork)}
	c.callCtx, c.stopCalls = context.WithCancel(context.Background())
	c.voiceCtx = services.WithCaller(c.callCtx, services.CallerVoiceServer)
	c.reg = services.NewRegistry(services.RegistryOptions{Prefixes: prefixes, Order: order,
		MaxDescription: int(cfg.Services.MaxDescription), MaxRegister: int(cfg.Services.MaxRegister), Log: log.With("component", "registry"),
		Policy: services.Policy{Allow: cfg.Services.Allow, Deny: cfg.Services.Deny}})
	limits := dispatchLimits(cfg.Services)
	limits.Log = log.With("component", "dispatch")
	c.disp = services.NewDispatcher(c.reg, limits)
	c.local = services.NewBudget(localBudget(cfg.Services))
	if cfg.Services.Builtins {
		if err := c.reg.Put(builtin.New(time.Now)); err != nil {
			return nil, fmt.Errorf("built-in services: %w", err)
		}
	}
	return c, nil
}

// SetLink gives the calls the link their results and registers go on.
func (c *Calls) SetLink(l Link) { c.link = l }

// Registry is the merged set of services; providers are added to it.
func (c *Calls) Registry() *services.Registry { return c.reg }

// Dispatcher runs calls.
func (c *Calls) Dispatcher() *services.Dispatcher { return c.disp }

// OnCall adds an observer of every call, whoever makes it (metrics).
// Add observers before the link runs; they must not block.
func (c *Calls) OnCall(f func(Record)) { c.observers = append(c.observers, f) }

// Live implements part.Live.
func (c *Calls) Live() []string { return []string{"services"} }

// Reload applies services.* (deadlines, limits, prefixes, policy, bounds,
// the built-ins) and the registry's ranks, which follow the MCP servers.
func (c *Calls) Reload(prev, next *config.Config, changed part.Changes) {
	if !changed.Touched("services", "mcp.servers", "mcp.servers_file") {
		return
	}
	prefixes, order := c.ranks(next)
	c.disp.SetLimits(dispatchLimits(next.Services))
	c.local.SetLimits(localBudget(next.Services))
	c.reg.Reconfigure(prefixes, services.Policy{Allow: next.Services.Allow, Deny: next.Services.Deny})
	c.reg.SetOrder(order)
	c.reg.SetBounds(int(next.Services.MaxDescription), int(next.Services.MaxRegister))
	if next.Services.Builtins && !prev.Services.Builtins {
		if err := c.reg.Put(builtin.New(nil)); err != nil {
			c.log.Error("the built-in services were refused", "err", err)
		}
	} else if !next.Services.Builtins && prev.Services.Builtins {
		c.reg.Remove(builtin.ID)
	}
}

// idleTrim: after this long without a call the daemon hands back the memory
// that start-up and its last calls needed (internal/memtrim).
const idleTrim = 5 * time.Second

// Stop ends the calls in flight (their results could no longer be sent)
// and waits for them and the workers: after the link ended.
func (c *Calls) Stop() {
	c.stopCalls()
	c.calls.Wait()
	c.workers.Wait()
}

// dispatchLimits are the dispatcher's deadlines and bounds from services.
func dispatchLimits(s config.Services) services.DispatchOptions {
	timeouts := make(map[string]time.Duration, len(s.Timeouts))
	for name, d := range s.Timeouts {
		timeouts[name] = d.D()
	}
	return services.DispatchOptions{Timeout: s.Timeout.D(), Timeouts: timeouts, MaxResult: int(s.MaxResult), MaxInFlight: s.MaxInFlight,
		MaxInFlightPerProvider: s.MaxInFlightPerProvider}
}
