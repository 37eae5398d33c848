package services

import (
	"context"
	"fmt"
)

// Caller is who makes a call. A provider reads it from its context
// (CallerOf) to refuse what only the device's owner may do, such as
// turning the microphone back on. Whoever hands a call to the dispatcher
// puts the caller in the context (WithCaller); the dispatcher passes that
// context on to the provider.
type Caller int

const (
	// CallerUnknown is a context that names no caller; it has the rights
	// of the least trusted caller.
	CallerUnknown Caller = iota
	// CallerVoiceServer is the voice server's model (an MCP call frame).
	CallerVoiceServer
	// CallerMCP is an MCP client of the host (agenthost mcp, mcp.serve):
	// a desktop assistant's model.
	CallerMCP
	// CallerOwner is the device's owner: the control socket (the CLI, a
	// button script), whose users the socket's permissions vouch for.
	CallerOwner
	// CallerPeer is another speaker of the household (an announcement to
	// every room): the rights of an unknown caller.
	CallerPeer
)

// String names the caller in logs and errors.
func (c Caller) String() string {
	switch c {
	case CallerVoiceServer:
		return "the voice server"
	case CallerMCP:
		return "an MCP client"
	case CallerOwner:
		return "the owner"
	case CallerPeer:
		return "a speaker of the household"
	}
	return "an unknown caller"
}

// Owner reports whether c may do what only the device's owner may.
func (c Caller) Owner() bool { return c == CallerOwner }

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries, CallerUnknown when none.
func CallerOf(ctx context.Context) Caller {
	if ctx == nil {
		return CallerUnknown
	}
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// HasCaller reports whether ctx names a caller.
func HasCaller(ctx context.Context) bool {
	_, ok := ctx.Value(callerKey{}).(Caller)
	return ok
}

// ParseCaller reads the name a control-socket client gives for the caller it
// acts for: "" or "owner" (the socket's own user), or "mcp" (a model behind
// agenthost mcp). Only a caller with fewer rights than the socket's own can
// be named.
func ParseCaller(s string) (Caller, error) {
	switch s {
	case "", "owner":
		return CallerOwner, nil
	case "mcp":
		return CallerMCP, nil
	}
	return CallerUnknown, fmt.Errorf(`caller %q is not "owner" or "mcp"`, s)
}
