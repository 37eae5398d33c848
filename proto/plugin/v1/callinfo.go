package pluginv1

import (
	"context"
	"slices"
)

// CallInfo is what the host tells a plugin about a call besides its
// method and params: who made it, and where a call that is not the owner's
// may reach besides public addresses. The host puts it in the context it
// calls [Client.Call] with ([WithCallInfo]); the plugin's [Server.Call]
// finds it in its context ([CallInfoFrom]).
type CallInfo struct {
	Caller Caller
	// NetworkAllow is plugins.network.allow.
	NetworkAllow []string
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the CallInfo ctx carries; none is the least
// trusted caller (CALLER_UNSPECIFIED) with nothing allowed.
func CallInfoFrom(ctx context.Context) CallInfo {
	info, _ := ctx.Value(callInfoKey{}).(CallInfo)
	info.NetworkAllow = slices.Clone(info.NetworkAllow)
	return info
}
