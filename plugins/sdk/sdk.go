// Package sdk is what an agenthost plugin author imports. A plugin is a small
// main package that describes its services and calls [Serve]; the SDK speaks
// the plugin contract (proto/plugin/v1) over hashicorp/go-plugin, validates
// the plugin's schemas at start and every call's params, turns handler
// errors and panics into error results a person can read, routes logging to
// stderr in the format the host forwards with its level, refuses to run when
// started by hand, and exits when the host process goes away. A handler
// learns who calls ([CallerOf]) and fetches with [HTTPClient], which reaches
// only public addresses (and what the owner allows) unless the owner calls.
//
//	func main() {
//		sdk.Serve(sdk.Plugin{
//			Name: "hello", Version: "1.0.0",
//			Services: []sdk.Service{{
//				Name:        "say_hello",
//				Description: "Greet someone by name",
//				Schema:      `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
//				Handler: func(ctx context.Context, p sdk.Params) (any, error) {
//					return "Hello, " + p.String("name"), nil
//				},
//			}},
//		})
//	}
//
// Plugin authors never import go-plugin or the contract package.
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// Version is the SDK's name and version as reported to the host in Describe.
const Version = "agenthost-sdk-go/1"

// Plugin describes a plugin: who it is, what it offers and how it takes its
// configuration.
type Plugin struct {
	// Name is the plugin's name: lower case letters, digits, '_' and '-'.
	// The host reads the plugin's config from `plugins.config.<Name>` and
	// logs its lines with `plugin=<Name>`.
	Name string
	// Version is the plugin's own version, e.g. "1.0.0".
	Version string
	// Services are the tools the plugin lends the voice server (at least one).
	Services []Service
	// Configure, if set, receives the plugin's config subtree as a JSON
	// object ("{}" when the YAML has none) before the first call and on every
	// reload. Returning an error rejects the config; the host reports it and
	// the previous config (if any) stays in force, so validate fully before
	// changing anything. While no config has been accepted, calls fail with
	// "not configured". [DecodeConfig] decodes strictly into a struct.
	Configure func(config json.RawMessage) error
	// Health, if set, tells the host whether the plugin can serve calls.
	Health func(ctx context.Context) error
}

// Service is one tool.
type Service struct {
	// Name is what the voice server calls: letters, digits, '_' and '-',
	// at most 64 characters, unique within the plugin.
	Name string
	// Description tells the voice server's model what the service does.
	Description string
	// Schema is the JSON Schema of the call's params, as JSON text: an object
	// schema ("type": "object"). Empty means no params. It is compiled at
	// start; an invalid schema stops the plugin with a message. See
	// [SchemaFor] and [TypedService] to derive it from a Go struct.
	Schema string
	// Timeout is this service's call deadline; zero means the host default.
	Timeout time.Duration
	// Handler runs a call. Its params have been validated against Schema.
	Handler Handler

	schemaErr error // from TypedService, reported by Validate
}

// Handler runs one call. The returned value becomes the result's data (it
// is encoded as JSON; a string becomes a JSON string, a json.RawMessage is
// used as is). A returned error becomes an error result whose message the
// voice server reads out, so write it for a person. ctx carries the call's
// deadline.
type Handler func(ctx context.Context, p Params) (any, error)

// Params are a call's params, a JSON object already validated against the
// service's schema.
type Params struct {
	raw json.RawMessage
	m   map[string]any
}

// NewParams parses a JSON object into Params; it is meant for tests of
// handlers. An empty raw means no params.
func NewParams(raw json.RawMessage) (Params, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return Params{}, fmt.Errorf("params must be a JSON object: %w", err)
	}
	if m == nil {
		return Params{}, errors.New("params must be a JSON object, not null")
	}
	return Params{raw: raw, m: m}, nil
}

// MustParams is NewParams for tests: it panics on invalid JSON.
func MustParams(raw string) Params {
	p, err := NewParams(json.RawMessage(raw))
	if err != nil {
		panic(err)
	}
	return p
}

// Raw returns the params as JSON.
func (p Params) Raw() json.RawMessage {
	if len(p.raw) == 0 {
		return json.RawMessage("{}")
	}
	return p.raw
}

// Decode decodes the params into v (usually a pointer to a struct).
func (p Params) Decode(v any) error {
	return json.Unmarshal(p.Raw(), v)
}

// Has reports whether the param is present (null counts as present).
func (p Params) Has(name string) bool {
	_, ok := p.m[name]
	return ok
}

// String returns a string param, or "" when absent or not a string.
func (p Params) String(name string) string {
	s, _ := p.m[name].(string)
	return s
}

// StringOr returns a string param, or def when absent or not a string.
func (p Params) StringOr(name, def string) string {
	if s, ok := p.m[name].(string); ok {
		return s
	}
	return def
}

// Bool returns a boolean param, or false when absent or not a boolean.
func (p Params) Bool(name string) bool {
	b, _ := p.m[name].(bool)
	return b
}

// Float returns a number param, or 0 when absent or not a number.
func (p Params) Float(name string) float64 {
	n, _ := p.m[name].(json.Number)
	f, _ := n.Float64()
	return f
}

// Int returns an integer param, or 0 when absent or not an integer.
func (p Params) Int(name string) int64 {
	n, _ := p.m[name].(json.Number)
	i, err := n.Int64()
	if err != nil {
		return 0
	}
	return i
}

// Strings returns an array-of-strings param; non-string items are skipped.
func (p Params) Strings(name string) []string {
	arr, _ := p.m[name].([]any)
	var out []string
	for _, v := range arr {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// InvalidParams returns an error that makes the call's result say the
// params were wrong (for checks the schema cannot express).
func InvalidParams(format string, args ...any) error {
	return pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, format, args...)
}

// DataDir returns the private, writable folder the host gave the plugin for
// its state, or "" when the host gave none.
func DataDir() string {
	return os.Getenv(pluginv1.EnvDataDir)
}

// DecodeConfig decodes a plugin's config into v, rejecting unknown keys so
// that a typo in the YAML is reported instead of silently ignored.
func DecodeConfig(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return fmt.Errorf("option %q: want %s, got %s", te.Field, te.Type, te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown option %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return err
	}
	return nil
}
