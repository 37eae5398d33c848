package calls

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// CallRequest is the body of POST /v1/call.
type CallRequest struct {
	Service string          `json:"service"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Caller is who the client acts for: "" (the socket's user, the
	// owner) or "mcp" (a model behind agenthost mcp), never more.
	Caller string `json:"caller,omitempty"`
}

// Endpoints adds POST /v1/call: a call as the owner, or as the client
// that the request names (an MCP client behind agenthost mcp).
func (c *Calls) Endpoints(s *control.Server) {
	control.HandleJSON(s, "POST /v1/call", func(ctx context.Context, in CallRequest) (any, error) {
		caller, err := services.ParseCaller(in.Caller)
		if err != nil {
			return nil, err
		}
		return c.Local(services.WithCaller(ctx, caller), in.Service, in.Params), nil
	})
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
	start := time.Now()
	out := c.disp.DispatchFrom(ctx, voice.Call{CallID: ID("local-"), Method: service, Params: params}, c.local, "")
	r := Record{Method: service, Caller: services.CallerOf(ctx), Took: time.Since(start), Success: out.Success}
	for _, f := range c.observers {
		f(r)
	}
	return out
}

// localBudget bounds the calls through the control socket (agenthost call,
// agenthost mcp): services.max_in_flight of their own, beside the voice
// server's, which they can then never make busy.
func localBudget(s config.Services) services.BudgetLimits {
	return services.BudgetLimits{Name: "the control socket's clients", Max: s.MaxInFlight, MaxSetting: "services.max_in_flight",
		PerProvider: s.MaxInFlightPerProvider, PerProviderSetting: "services.max_in_flight_per_provider"}
}
