// Package calls is the daemon's part that answers for its services: the
// registry and the dispatcher (with services.* as their limits and the
// built-ins in them), the register sent to the voice server on each
// connection and on each change of the set, the voice server's calls (a
// pool of workers, one answer each) and the local ones (the control socket).
package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/memtrim"
	"github.com/agenthost/agenthost/internal/stall"
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

// Record is one call from the voice server, as observers see it.
type Record struct {
	Method  string
	Took    time.Duration // dispatch, the provider, and queueing the result
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

// OnCall adds an observer of every call from the voice server (metrics).
// Add observers before the link runs; they must not block.
func (c *Calls) OnCall(f func(Record)) { c.observers = append(c.observers, f) }

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

// Serve hands back idle memory from now on (internal/memtrim) and sends a
// register on each change of the set until ctx ends.
func (c *Calls) Serve(ctx context.Context) {
	c.trim.Store(memtrim.Start(memtrim.Options{GCPercent: 50, MemoryLimit: 64 << 20, IdleAfter: idleTrim}))
	for {
		select {
		case <-c.reg.Changes():
			c.sendRegister(0)
		case <-ctx.Done():
			return
		}
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

// LinkUp sends the register on a new connection.
func (c *Calls) LinkUp(conn int) {
	c.mu.Lock()
	c.conn, c.registered = conn, nil
	c.mu.Unlock()
	c.sendRegister(conn)
}

// LinkDown forgets the connection that ended.
func (c *Calls) LinkDown(conn int) {
	c.mu.Lock()
	if c.conn == conn {
		c.conn, c.registered = 0, nil
	}
	c.mu.Unlock()
}

// Registers is how many registers were sent since start.
func (c *Calls) Registers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registers
}

// Check implements part.Checker: the dispatcher, and the register's lock.
func (c *Calls) Check(ctx context.Context) error {
	if err := c.disp.Check(ctx); err != nil {
		return err
	}
	if err := stall.Lock(ctx, &c.mu); err != nil {
		return errors.New("the host's register lock is held and not released")
	}
	return nil
}

// sendRegister sends the whole service set on the current connection unless
// that connection already has exactly this set. conn 0 means "whatever is up".
func (c *Calls) sendRegister(conn int) {
	c.mu.Lock() // held while reading the set, so an older set never overtakes a newer one
	defer c.mu.Unlock()
	payload := c.reg.Canonical()
	if conn == 0 {
		conn = c.conn
	}
	if conn == 0 || conn != c.conn || bytes.Equal(payload, c.registered) {
		return
	}
	if err := c.link.Send(voice.MCPFrame(payload)); err != nil {
		c.log.Warn("could not send the register message", "err", err)
		return
	}
	c.registered = payload
	c.registers++
	c.log.Info("registered services with the voice server", "conn", conn, "services", len(c.reg.Names()))
}

// Frame takes an MCP frame of the voice server's.
func (c *Calls) Frame(conn int, f voice.Frame) {
	v, err := voice.ParseMCP(f.Payload)
	if err != nil {
		c.log.Warn("ignored an MCP message the host cannot read", "err", err)
		// A call readable enough to carry a call_id still gets its one answer.
		var m struct {
			Type string `json:"type"`
			Data struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		if json.Unmarshal(f.Payload, &m) == nil && m.Type == voice.MCPCall && m.Data.CallID != "" {
			c.calls.Add(1)
			go c.answer(conn, voice.Call{CallID: m.Data.CallID}, voice.Outcome{Error: "malformed call: " + err.Error()})
		}
		return
	}
	switch m := v.(type) {
	case *voice.Call:
		c.calls.Add(1)
		c.runCall(conn, *m)
	default:
		c.log.Info("ignored an MCP message of a kind the server does not send", "kind", fmt.Sprintf("%T", m))
	}
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
func (c *Calls) runCall(conn int, call voice.Call) {
	select {
	case c.work <- callWork{conn, call}:
	default:
		c.workers.Add(1)
		go c.worker(callWork{conn, call})
	}
}

func (c *Calls) worker(w callWork) {
	defer c.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		c.handleCall(w.conn, w.c)
		idle.Reset(workerIdle)
		select {
		case w = <-c.work:
		case <-idle.C:
			return
		case <-c.callCtx.Done():
			return
		}
	}
}

// handleCall runs one MCP call and answers it with exactly one result.
func (c *Calls) handleCall(conn int, call voice.Call) {
	start := time.Now()
	out := c.disp.Dispatch(c.voiceCtx, call)
	c.answer(conn, call, out)
	took := time.Since(start)
	c.trim.Load().Busy()
	for _, f := range c.observers {
		f(Record{Method: call.Method, Took: took, Success: out.Success})
	}
	// Debug: a line per call would be most of a call's cost on a Pi; the
	// dispatcher logs failures at info, and metrics count every call.
	c.log.Debug("call answered", "method", call.Method, "call_id", call.CallID, "success", out.Success, "took", took.Round(time.Microsecond))
}

func (c *Calls) answer(conn int, call voice.Call, out voice.Outcome) {
	defer c.calls.Done()
	payload, err := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: call.CallID, Result: out})
	if err != nil {
		payload, _ = voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: call.CallID, Result: voice.Outcome{Error: "the result could not be encoded: " + err.Error()}})
	}
	if up, cur := c.link.Up(); !up || cur != conn {
		c.log.Warn("the result of a call was lost: the connection it came on has closed", "method", call.Method, "call_id", call.CallID)
		return
	}
	if err := c.link.Send(voice.MCPFrame(payload)); err != nil {
		c.log.Warn("could not send a call result", "method", call.Method, "call_id", call.CallID, "err", err)
	}
}

var localCalls atomic.Int64

// ID is a call id for a call that does not come from the voice server.
func ID(prefix string) string { return prefix + strconv.FormatInt(localCalls.Add(1), 10) }

// Local runs one call through the same dispatch as the server's calls,
// with a budget of calls in flight of its own. The caller is the owner
// unless ctx names another (services.WithCaller: an MCP client).
func (c *Calls) Local(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
	if !services.HasCaller(ctx) {
		ctx = services.WithCaller(ctx, services.CallerOwner)
	}
	return c.disp.DispatchFrom(ctx, voice.Call{CallID: ID("local-"), Method: service, Params: params}, c.local, "")
}

// localBudget bounds the calls through the control socket (agenthost call,
// agenthost mcp): services.max_in_flight of their own, beside the voice
// server's, which they can then never make busy.
func localBudget(s config.Services) services.BudgetLimits {
	return services.BudgetLimits{Name: "the control socket's clients", Max: s.MaxInFlight, MaxSetting: "services.max_in_flight",
		PerProvider: s.MaxInFlightPerProvider, PerProviderSetting: "services.max_in_flight_per_provider"}
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
