package calls

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/services"
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
