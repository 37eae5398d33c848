// Package mcpendpoint serves the daemon's services over MCP: the Streamable
// HTTP endpoint of mcp.serve (a part), the control socket's endpoints that
// `agenthost mcp` reads, and the client side of those for `agenthost mcp`
// (DaemonCatalog, DaemonCaller).
package mcpendpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// ServicesResponse is the answer of GET /v1/services and POST
// /v1/services/wait: the merged set with schemas, and a version that
// changes whenever the set does.
type ServicesResponse struct {
	Version  string           `json:"version"`
	Services []mcpserver.Tool `json:"services"`
}

// WaitRequest is the body of POST /v1/services/wait: it answers when the
// set's version differs from Version, or after Timeout (at most 50s; 25s
// when zero) with the same version.
type WaitRequest struct {
	Version   string `json:"version"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// Endpoints adds the endpoints `agenthost mcp` uses to serve a running
// daemon's services in reg: GET /v1/services and the long poll POST
// /v1/services/wait (calls go through POST /v1/call).
func Endpoints(s *control.Server, reg *services.Registry) {
	control.HandleJSON(s, "GET /v1/services", func(context.Context, struct{}) (any, error) {
		return servicesOf(reg), nil
	})
	control.HandleJSON(s, "POST /v1/services/wait", func(ctx context.Context, in WaitRequest) (any, error) {
		timeout := time.Duration(in.TimeoutMS) * time.Millisecond
		if timeout <= 0 {
			timeout = 25 * time.Second
		}
		timeout = min(timeout, 50*time.Second)
		ch, cancel := reg.Subscribe()
		defer cancel()
		t := time.NewTimer(timeout)
		defer t.Stop()
		for {
			cur := servicesOf(reg)
			if cur.Version != in.Version {
				return cur, nil
			}
			select {
			case <-ch:
			case <-t.C:
				return cur, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	})
}

// servicesOf is reg's current set and its version (a hash of the register).
func servicesOf(reg *services.Registry) ServicesResponse {
	canonical := reg.Canonical()
	sum := sha256.Sum256(canonical)
	out := ServicesResponse{Version: hex.EncodeToString(sum[:8]), Services: []mcpserver.Tool{}}
	for _, e := range reg.Entries() {
		out.Services = append(out.Services, mcpserver.Tool{Name: e.Name, Description: e.Service.Description, Parameters: e.Service.Parameters})
	}
	return out
}

// Endpoint is a part that serves the daemon's services as an MCP server
// over Streamable HTTP at http://<addr>/mcp. Its clients' calls have a
// budget of their own (mcp.serve.max_calls, max_calls_per_session), apart
// from the voice server's.
type Endpoint struct {
	calls   *calls.Calls
	log     *slog.Logger
	addr    string
	version string
	opts    mcpserver.HTTPOptions
	limits  services.BudgetLimits // the budget's at start
	budget  *services.Budget      // its clients' calls in flight
}

// New returns the part serving MCP on addr with cfg's bounds (nothing
// listens unless it runs).
func New(cfg *config.Config, c *calls.Calls, log *slog.Logger, addr, version string, o mcpserver.HTTPOptions) *Endpoint {
	if o.Log == nil {
		o.Log = log.With("component", "mcp-server")
	}
	serve := cfg.MCP.Serve
	limits := services.BudgetLimits{Name: "MCP clients", ClientName: "MCP session",
		Max: serve.MaxCalls, MaxSetting: "mcp.serve.max_calls", PerClient: serve.MaxCallsPerSession, PerClientSetting: "mcp.serve.max_calls_per_session",
		PerProvider: cfg.Services.MaxInFlightPerProvider, PerProviderSetting: "services.max_in_flight_per_provider"}
	return &Endpoint{calls: c, log: log, addr: addr, version: version, opts: o, limits: limits, budget: services.NewBudget(limits)}
}

// Reload implements part.Reloader: services.max_in_flight_per_provider
// bounds the clients' calls to one provider from the next call on
// (mcp.serve.* apply after a restart: the bounds of the start stay).
func (m *Endpoint) Reload(_, next *config.Config, changed part.Changes) {
	if changed.Touched("services.max_in_flight_per_provider") {
		l := m.limits
		l.PerProvider = next.Services.MaxInFlightPerProvider
		m.budget.SetLimits(l)
	}
}

// Name implements part.Part.
func (m *Endpoint) Name() string { return "MCP endpoint" }

// Run implements part.Part.
func (m *Endpoint) Run(ctx context.Context, ready func()) error {
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", m.addr, err)
	}
	srv := mcpserver.New(mcpserver.RegistryCatalog(m.calls.Registry()), mcpserver.CallerFunc(func(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
		call := voice.Call{CallID: calls.ID("mcp-"), Method: service, Params: params}
		return m.calls.Dispatcher().DispatchFrom(services.WithCaller(ctx, services.CallerMCP), call, m.budget, mcpserver.SessionID(ctx))
	}), mcpserver.Options{Version: m.version, Log: m.log.With("component", "mcp-server")})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		srv.Run(ctx)
		close(done)
	}()
	ready()
	err = srv.Serve(ctx, ln, m.opts)
	cancel()
	<-done
	return err
}

// DaemonCatalog is the Catalog of a running daemon, read over its control
// socket: `agenthost mcp` proxies to it.
type DaemonCatalog struct {
	c   *control.Client
	log *slog.Logger

	cur chan ServicesResponse // holds the latest set (a buffer of one)
}

// daemonAnswer bounds the requests of `agenthost mcp` that the daemon
// answers without waiting for a service; calls have no bound but their
// context (the daemon ends them at the service's deadline).
const daemonAnswer = 60 * time.Second

// NewDaemonCatalog reads the daemon's set once; it fails (wrapping
// control.ErrNotRunning) when no daemon answers.
func NewDaemonCatalog(ctx context.Context, c *control.Client, log *slog.Logger) (*DaemonCatalog, error) {
	var first ServicesResponse
	ctx, cancel := context.WithTimeout(ctx, daemonAnswer)
	defer cancel()
	if err := c.Do(ctx, "GET /v1/services", nil, &first); err != nil {
		return nil, err
	}
	d := &DaemonCatalog{c: c, log: log, cur: make(chan ServicesResponse, 1)}
	d.cur <- first
	return d, nil
}

func (d *DaemonCatalog) latest() ServicesResponse {
	v := <-d.cur
	d.cur <- v
	return v
}

// Tools implements mcpserver.Catalog.
func (d *DaemonCatalog) Tools() []mcpserver.Tool { return d.latest().Services }

// Subscribe implements mcpserver.Catalog: a long poll of the daemon runs
// until cancel. A daemon that goes away is retried every few seconds; its
// tools stay as they were until it answers again.
func (d *DaemonCatalog) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var next ServicesResponse
			// The daemon answers a wait within 50 s.
			pctx, cancelPoll := context.WithTimeout(ctx, daemonAnswer)
			err := d.c.Do(pctx, "POST /v1/services/wait", WaitRequest{Version: d.latest().Version}, &next)
			cancelPoll()
			if err != nil {
				if ctx.Err() == nil {
					d.log.Warn("cannot follow the daemon's services; retrying", "err", err)
					select {
					case <-ctx.Done():
					case <-time.After(3 * time.Second):
					}
				}
				continue
			}
			prev := <-d.cur
			d.cur <- next
			if next.Version != prev.Version {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch, func() { cancel(); <-done }
}

// DaemonCaller runs calls on a daemon through POST /v1/call, as an MCP
// client (which may not do what only the owner may).
func DaemonCaller(c *control.Client) mcpserver.Caller {
	return mcpserver.CallerFunc(func(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
		var out voice.Outcome
		if err := c.Do(ctx, "POST /v1/call", calls.CallRequest{Service: service, Params: params, Caller: "mcp"}, &out); err != nil {
			return voice.Outcome{Error: fmt.Sprintf("%s: the agenthost daemon did not answer: %v", service, err)}
		}
		return out
	})
}
