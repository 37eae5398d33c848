package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/mcpserver"
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

// AddMCPEndpoints adds the endpoints `agenthost mcp` uses to serve a
// running daemon's services: GET /v1/services and the long poll POST
// /v1/services/wait (calls go through POST /v1/call).
func (h *Host) AddMCPEndpoints(s *control.Server) {
	control.HandleJSON(s, "GET /v1/services", func(context.Context, struct{}) (any, error) {
		return h.services(), nil
	})
	control.HandleJSON(s, "POST /v1/services/wait", func(ctx context.Context, in WaitRequest) (any, error) {
		timeout := time.Duration(in.TimeoutMS) * time.Millisecond
		if timeout <= 0 {
			timeout = 25 * time.Second
		}
		timeout = min(timeout, 50*time.Second)
		ch, cancel := h.reg.Subscribe()
		defer cancel()
		t := time.NewTimer(timeout)
		defer t.Stop()
		for {
			cur := h.services()
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

// services is the current set and its version (a hash of the register).
func (h *Host) services() ServicesResponse {
	canonical := h.reg.Canonical()
	sum := sha256.Sum256(canonical)
	out := ServicesResponse{Version: hex.EncodeToString(sum[:8]), Services: []mcpserver.Tool{}}
	for _, e := range h.reg.Entries() {
		out.Services = append(out.Services, mcpserver.Tool{Name: e.Name, Description: e.Service.Description, Parameters: e.Service.Parameters})
	}
	return out
}

// MCPEndpoint is a Component that serves the host as an MCP server over
// Streamable HTTP at http://<addr>/mcp. Its clients' calls have a budget
// of their own (mcp.serve.max_calls, max_calls_per_session), apart from
// the voice server's.
type MCPEndpoint struct {
	h       *Host
	addr    string
	version string
	opts    mcpserver.HTTPOptions
}

// MCPEndpoint returns the component serving MCP on addr (add it with Add;
// nothing listens unless it is added).
func (h *Host) MCPEndpoint(addr, version string, o mcpserver.HTTPOptions) *MCPEndpoint {
	if o.Log == nil {
		o.Log = h.log.With("component", "mcp-server")
	}
	return &MCPEndpoint{h: h, addr: addr, version: version, opts: o}
}

// Name implements Component.
func (m *MCPEndpoint) Name() string { return "MCP endpoint" }

// Run implements Component.
func (m *MCPEndpoint) Run(ctx context.Context, ready func()) error {
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", m.addr, err)
	}
	serve := m.h.Config().MCP.Serve
	budget := services.NewBudget(services.BudgetLimits{Name: "MCP clients", ClientName: "MCP session",
		Max: serve.MaxCalls, MaxSetting: "mcp.serve.max_calls", PerClient: serve.MaxCallsPerSession, PerClientSetting: "mcp.serve.max_calls_per_session",
		PerProvider: m.h.Config().Services.MaxInFlightPerProvider, PerProviderSetting: "services.max_in_flight_per_provider"})
	srv := mcpserver.New(mcpserver.RegistryCatalog(m.h.reg), mcpserver.CallerFunc(func(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
		call := voice.Call{CallID: calls.ID("mcp-"), Method: service, Params: params}
		return m.h.disp.DispatchFrom(services.WithCaller(ctx, services.CallerMCP), call, budget, mcpserver.SessionID(ctx))
	}), mcpserver.Options{Version: m.version, Log: m.h.log.With("component", "mcp-server")})
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
		if err := c.Do(ctx, "POST /v1/call", CallRequest{Service: service, Params: params, Caller: "mcp"}, &out); err != nil {
			return voice.Outcome{Error: fmt.Sprintf("%s: the agenthost daemon did not answer: %v", service, err)}
		}
		return out
	})
}
