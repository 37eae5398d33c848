package sdk

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/internal/netguard"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// Who calls, and where a call may reach.
//
// A call of the voice server's model, of an MCP client or of an unknown
// caller may make the plugin connect only to public addresses, and to what
// the owner allows in plugins.network.allow; the owner's own calls (the
// CLI, a button) may reach any address. HTTPClient and DialContext check
// this as each connection is made, after DNS: a redirect, a URL found in a
// fetched body and a DNS answer that changes are all held to it.

// Caller is who made a call.
type Caller int

const (
	// CallerUnknown is a call whose caller the host did not say (an older
	// host): treat it as the least trusted.
	CallerUnknown Caller = iota
	// CallerVoiceServer is the voice server's model.
	CallerVoiceServer
	// CallerMCPClient is an MCP client of the host: a desktop assistant's model.
	CallerMCPClient
	// CallerOwner is the device's owner: the CLI or a button, through the
	// host's control socket.
	CallerOwner
)

// String names the caller, for logs.
func (c Caller) String() string {
	switch c {
	case CallerVoiceServer:
		return "the voice server"
	case CallerMCPClient:
		return "an MCP client"
	case CallerOwner:
		return "the owner"
	}
	return "an unknown caller"
}

// CallerOf returns who made the call whose context (or one derived from
// it) ctx is.
func CallerOf(ctx context.Context) Caller {
	switch pluginv1.CallInfoFrom(ctx).Caller {
	case pluginv1.Caller_CALLER_VOICE_SERVER:
		return CallerVoiceServer
	case pluginv1.Caller_CALLER_MCP_CLIENT:
		return CallerMCPClient
	case pluginv1.Caller_CALLER_OWNER:
		return CallerOwner
	}
	return CallerUnknown
}

// ErrAddressNotAllowed is what a connection of HTTPClient or DialContext
// fails with (wrapped; test with errors.Is) when it would reach an address
// that is not public and that the owner has not allowed.
var ErrAddressNotAllowed = netguard.ErrNotAllowed

// policyOf is where the call of ctx may reach.
func policyOf(ctx context.Context) netguard.Policy {
	info := pluginv1.CallInfoFrom(ctx)
	if info.Caller == pluginv1.Caller_CALLER_OWNER {
		return netguard.Policy{Anywhere: true}
	}
	return netguard.Policy{Allow: netguard.ParseValid(info.NetworkAllow)}
}

// DialContext returns a dial function for the call of ctx, for a
// transport or protocol of your own (an http.Transport's DialContext, a
// database driver): it dials as d does (nil: a 30 s timeout), and refuses
// an address the call may not reach with ErrAddressNotAllowed, before it
// connects. It keeps the call's rights after the call ends (a stream that
// plays on), not the call's deadline: ctx is only read.
func DialContext(ctx context.Context, d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	}
	return policyOf(ctx).DialContext(d)
}

// transports are HTTPClient's, one per policy (the owner's, or one list):
// connections are pooled only between calls with the same rights.
var transports sync.Map // policy key -> *http.Transport

// HTTPClient returns an HTTP client for the call of ctx: it reaches only
// what the call may (see DialContext), checked for every connection,
// redirects included; it uses no proxy (the check could not see past one),
// sends no Referer (a URL's secrets stay with its host), and follows at
// most 10 redirects. Do not change its Transport, which calls with the
// same rights share; build your own on DialContext instead.
func HTTPClient(ctx context.Context) *http.Client {
	info := pluginv1.CallInfoFrom(ctx)
	key := "allow:" + strings.Join(info.NetworkAllow, "\n")
	if info.Caller == pluginv1.Caller_CALLER_OWNER {
		key = "owner"
	}
	tr, ok := transports.Load(key)
	if !ok {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = DialContext(ctx, nil)
		tr, _ = transports.LoadOrStore(key, t)
	}
	return &http.Client{Transport: tr.(*http.Transport), CheckRedirect: CheckRedirect}
}

// CheckRedirect is HTTPClient's redirect policy, for a client of your own:
// at most 10 redirects, and no Referer (Go's client sets one to the URL
// redirected from, query and all).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	req.Header.Del("Referer")
	return nil
}
