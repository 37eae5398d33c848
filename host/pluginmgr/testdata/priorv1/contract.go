// Package pluginv1 owns version 1 of the agenthost plugin contract: the gRPC
// service in plugin.proto (and the code generated from it), the go-plugin
// handshake, and the go-plugin GRPCPlugin that connects the two sides.
//
// The host starts a plugin binary with go-plugin using [Handshake] and
// [PluginSet], dispenses [PluginName], and gets a [Client]. A plugin serves a
// [Server] (normally through plugins/sdk, which hides all of this) with
// [GRPCPlugin].
//
// Errors: Call returns a [*CallError] when the service refused or failed (the
// message is meant for a person and goes to the voice server as the result's
// error). Any other error means the call did not complete: a gRPC status of
// codes.DeadlineExceeded or codes.Canceled when ctx's deadline passed or ctx
// was cancelled (always, also when the handler noticed first), otherwise the
// plugin process or the connection failed (codes.Unavailable; check
// plugin.Client.Exited).
// Configure returns a [*ConfigError] when the plugin rejected its config.
package pluginv1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-plugin"
)

// PluginName is the name the host dispenses from a plugin's go-plugin client.
const PluginName = "services"

// ProtocolVersion is the go-plugin application protocol version of this
// contract. A new incompatible contract gets a new version and package.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake shared by the host and every plugin.
// A binary started without the cookie in its environment is not started by
// the host (the SDK refuses to run then).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "AGENTHOST_PLUGIN",
	MagicCookieValue: "7f0c4b1e-agenthost-services-v1-3d9a52e8",
}

// EnvDataDir is the environment variable through which the host gives a
// plugin a private, writable folder for its state (for example
// /var/lib/agenthost/plugins/<name>). It may be unset; plugins must cope.
const EnvDataDir = "AGENTHOST_PLUGIN_DATA_DIR"

// PluginSet returns the go-plugin plugin map a host passes as
// ClientConfig.Plugins.
func PluginSet() plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{}}
}

// Description is what Describe returns.
type Description struct {
	// Name is the plugin's name (`plugins.config.<Name>`, `plugin=<Name>`).
	Name string
	// Version is the plugin's own version.
	Version string
	// SDK names the library that built the plugin; may be empty.
	SDK      string
	Services []ServiceSpec
}

// ServiceSpec is one service a plugin offers.
type ServiceSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the call's params.
	Parameters json.RawMessage
	// Timeout is the service's own call deadline; zero means the host default.
	Timeout time.Duration
}

// Client is the host's view of one running plugin. Every method is safe for
// concurrent use. It is also what a plugin implements (see [Server]).
type Client interface {
	Describe(ctx context.Context) (*Description, error)
	// Configure hands the plugin its config subtree (a JSON object; nil or
	// empty means "{}"). A rejection is a *ConfigError.
	Configure(ctx context.Context, config json.RawMessage) error
	// Call runs a service under ctx's deadline and returns the result's data
	// as JSON. A refusal or failure of the service is a *CallError; a call
	// whose ctx ended gives a gRPC status error with codes.DeadlineExceeded
	// or codes.Canceled.
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Health returns nil when the plugin can serve calls; an unhealthy plugin
	// gives an error wrapping ErrUnhealthy.
	Health(ctx context.Context) error
}

// Server is what a plugin implements; it has the same methods as [Client].
// Errors returned from Call that are not a *CallError are sent as a
// CallError of kind [ErrorKind_ERROR_KIND_FAILED]; errors from Configure are
// sent as the rejection message; an error from Health marks the plugin
// unhealthy with its message.
type Server = Client

// ErrUnhealthy is wrapped by the error Health returns for a plugin that
// answered but said it cannot serve.
var ErrUnhealthy = errors.New("plugin unhealthy")

// CallError is a service's refusal or failure: the call reached the plugin
// and the plugin answered, with an error meant for a person.
type CallError struct {
	Kind    ErrorKind
	Message string
}

func (e *CallError) Error() string { return e.Message }

// NewCallError returns a CallError of the given kind.
func NewCallError(kind ErrorKind, format string, args ...any) *CallError {
	return &CallError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AsCallError reports whether err is (or wraps) a *CallError and returns it.
func AsCallError(err error) (*CallError, bool) {
	var ce *CallError
	ok := errors.As(err, &ce)
	return ce, ok
}

// ConfigError is a plugin's rejection of its config.
type ConfigError struct {
	Message string
}

func (e *ConfigError) Error() string { return "config rejected: " + e.Message }
