// Package builtin owns the host's built-in services: a provider with ID
// "builtin" that is a fallback, so any plugin or MCP server offering the same
// name replaces it (and it comes back when that provider leaves). Unlike the
// device's names (reserved: they act on the speaker), these are left open on
// purpose: get_current_time reads the clock and changes nothing, so a provider
// that answers it differently (the clock plugin, a server with the owner's
// calendar zone) misleads nobody about the speaker.
//
// It offers get_current_time exactly as the MCP seed documents define it,
// with the answers of internal/timefmt (the same as the clock plugin's).
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/timefmt"
)

// ID is the provider ID of the built-ins.
const ID = "builtin"

// Names of the built-in services.
const (
	GetCurrentTime = timefmt.Name
)

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
		Description: timefmt.Description,
		Parameters:  json.RawMessage(timefmt.Schema),
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
	s, err := timefmt.Format(p.now(), args.Format)
	if err != nil {
		return nil, fmt.Errorf("get_current_time: %w", err)
	}
	return json.Marshal(s)
}
