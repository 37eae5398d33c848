// Package builtin owns the host's built-in services: a provider with ID
// "builtin" that is a fallback, so any plugin or MCP server offering the same
// name replaces it (and it comes back when that provider leaves).
//
// It offers get_current_time exactly as the MCP seed documents define it.
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/host/services"
)

// ID is the provider ID of the built-ins.
const ID = "builtin"

// Names of the built-in services.
const (
	GetCurrentTime = "get_current_time"
)

// Layouts of get_current_time's two formats.
const (
	// SimpleLayout gives "2025-01-22 14:30:25", as in the seeds' example.
	SimpleLayout = "2006-01-02 15:04:05"
	// DetailedLayout gives "Wednesday, 22 January 2025, 14:30:25 CET (UTC+01:00)".
	DetailedLayout = "Monday, 2 January 2006, 15:04:05 MST (UTC-07:00)"
)

// getCurrentTimeParams is the seeds' schema, verbatim.
const getCurrentTimeParams = `{
  "type": "object",
  "properties": {
    "format": {
      "type": "string",
      "enum": ["simple", "detailed"],
      "description": "simple = short, detailed = full info"
    }
  }
}`

// Provider is the built-in provider.
type Provider struct {
	now func() time.Time
}

var _ services.FallbackProvider = (*Provider)(nil)

// New returns the built-in provider. now is the clock (time.Now when nil);
// tests inject a fixed one.
func New(now func() time.Time) services.Provider {
	if now == nil {
		now = time.Now
	}
	return &Provider{now: now}
}

// ID returns "builtin".
func (*Provider) ID() string { return ID }

// Fallback reports true: a built-in yields its name to any other provider.
func (*Provider) Fallback() bool { return true }

// Services lists the built-in services.
func (*Provider) Services() []services.Service {
	return []services.Service{{
		Name:        GetCurrentTime,
		Description: "Retrieve current date and time",
		Parameters:  json.RawMessage(getCurrentTimeParams),
	}}
}

// Call runs a built-in service. params have been validated by the
// dispatcher; Call still checks what it relies on.
func (p *Provider) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case GetCurrentTime:
		return p.currentTime(params)
	}
	return nil, fmt.Errorf("builtin: unknown service %q", method)
}

// currentTime answers get_current_time: format "simple" (the default) or
// "detailed", in the clock's time zone.
func (p *Provider) currentTime(params json.RawMessage) (json.RawMessage, error) {
	var args struct {
		Format string `json:"format"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &args); err != nil {
			return nil, fmt.Errorf("get_current_time: %w", err)
		}
	}
	t := p.now()
	var s string
	switch args.Format {
	case "", "simple":
		s = t.Format(SimpleLayout)
	case "detailed":
		s = t.Format(DetailedLayout)
	default:
		return nil, fmt.Errorf("get_current_time: format must be \"simple\" or \"detailed\" (got %q)", args.Format)
	}
	return json.Marshal(s)
}
