// Package services owns the set of services the host lends to the voice server:
// the Provider contract, the registry that merges providers into one set, and
// the dispatcher that validates and runs the server's calls.
package services

import (
	"context"
	"encoding/json"
	"time"
)

// Service is one tool a provider offers: the entry of an MCP `register` message.
type Service struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object, kept as raw JSON.
	Parameters json.RawMessage
	// Timeout overrides the dispatcher's default deadline when non-zero.
	Timeout time.Duration
}

// Provider is anything that offers services: a plugin process, a standard MCP
// server, or the host's built-ins.
type Provider interface {
	// ID names the provider in logs and errors, e.g. "plugin:clock" or "builtin".
	ID() string
	// Services lists what the provider offers now.
	Services() []Service
	// Call runs one service. params has already been validated against the
	// service's schema. The returned value becomes the result's `data`.
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// FallbackProvider is implemented by providers whose services yield to any
// other provider offering the same name, such as the host's built-ins: a
// plugin's get_current_time replaces the built-in one, and the built-in one
// comes back when the plugin leaves. A provider without this method, or whose
// Fallback returns false, is an ordinary provider.
type FallbackProvider interface {
	Provider
	Fallback() bool
}

// ReservingProvider is implemented by providers whose names no other
// provider may have, such as the device's (mute_microphone, set_volume, …):
// servers, the owner and scripts rely on them to act on the speaker itself.
// Their names are reserved from the moment the registry sees the provider
// (Put or Registry.Reserve) and stay so after it leaves; another provider
// offering one is refused that service, whatever the order (a clash, in the
// log and Conflicts, with the fix: a prefix).
type ReservingProvider interface {
	Provider
	Reserved() bool
}

// ContextProvider is implemented by providers whose calls return promptly
// once their context ends (a call over gRPC or JSON-RPC), such as plugins
// and MCP servers. The dispatcher runs their calls on its own goroutine;
// other providers' calls get a goroutine of their own, so that a provider
// that ignores its deadline cannot hold the caller past it.
type ContextProvider interface {
	Provider
	HonorsContext() bool
}

func honorsContext(p Provider) bool {
	c, ok := p.(interface{ HonorsContext() bool })
	return ok && c.HonorsContext()
}

// isReserving reports whether p's names are reserved for it.
func isReserving(p Provider) bool {
	f, ok := p.(interface{ Reserved() bool })
	return ok && f.Reserved()
}

// isFallback reports whether p yields its names to ordinary providers.
func isFallback(p Provider) bool {
	f, ok := p.(interface{ Fallback() bool })
	return ok && f.Fallback()
}
