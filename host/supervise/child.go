// Package supervise owns the life cycle of a supervised child: one provider
// of services that lives in another process or behind a connection (a plugin
// binary, a standard MCP server). It is written once and used by every kind
// of child: start under a deadline, describe, serve calls, swap in a new
// child before the old one drains (hot reload), restart a child that died
// with backoff and park one that keeps dying, start a lazy child on its
// first call and stop it when idle, stop with a grace period, and leave no
// process behind.
//
// The kind-specific parts (how to start a plugin over go-plugin, how to talk
// MCP) implement Child and are handed to a Supervisor as a Starter.
package supervise

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agenthost/agenthost/host/services"
)

// Child is one running life of a provider: a started plugin process, a
// connected MCP session. A Child never restarts itself; when it ends, the
// Supervisor starts a new one through its Starter.
type Child interface {
	// Services is what the child offers now. It may change while the child
	// runs (an MCP server's tools/list_changed), announced on Changed.
	Services() []services.Service
	// Call runs one service (its unprefixed name). params have been validated
	// by the dispatcher. An error that wraps ErrGone says the child died or
	// its connection broke during or before the call.
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Done is closed when the child has ended, on its own or after Kill.
	Done() <-chan struct{}
	// Changed signals that Services changed; nil when it never does.
	Changed() <-chan struct{}
	// Kill ends the child now and releases everything it holds (process,
	// connection, goroutines). It may be called more than once.
	Kill()
	// Info describes the child for status output.
	Info() Info
}

// Info is what `agenthost status` and `agenthost plugins` show of a running child.
type Info struct {
	PID       int    `json:"pid,omitempty"`
	Version   string `json:"version,omitempty"`
	Transport string `json:"transport,omitempty"` // "go-plugin", "stdio", "streamable-http", "sse"
	// Build names what the child runs where its kind has builds: a plugin
	// binary's sha256. It comes with the PID, so a status never pairs one
	// build with another's process.
	Build string `json:"build,omitempty"`
}

// Starter starts a new child. It must honour ctx (the start deadline) and,
// on failure, leave nothing running. Its error is shown to the user as the
// reason the provider does not run, so it says what to do.
type Starter func(ctx context.Context) (Child, error)

// ErrUnchanged, from a Load's Starter, says that what it would start is
// what already serves (a binary installed again): the Load is dropped
// without a word, and the child serving stays.
var ErrUnchanged = errors.New("the provider is unchanged")

// ErrGone is wrapped by a Child's Call error when the child died or lost its
// connection; the Supervisor then treats the child as crashed.
var ErrGone = errors.New("the provider's process or connection is gone")
