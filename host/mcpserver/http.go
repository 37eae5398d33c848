package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/clip"
	"github.com/agenthost/agenthost/internal/httpserve"
	"github.com/agenthost/agenthost/internal/lograte"
	"github.com/agenthost/agenthost/internal/quietlog"
)

// Path is where the Streamable HTTP endpoint is served.
const Path = "/mcp"

// HTTPOptions configures the Streamable HTTP endpoint.
type HTTPOptions struct {
	// Token, when set, must come as "Authorization: Bearer <token>". It is
	// compared in constant time and never logged.
	Token string
	// AllowedOrigins are browser origins ("https://app.example:8443")
	// allowed besides the local ones. A request without Origin (a program,
	// not a browser) is allowed; one from another origin is refused with
	// 403, as the MCP spec asks of local servers (DNS rebinding).
	AllowedOrigins []string
	// Hosts are the names requests may give as their host besides the
	// address, loopback names and the machine's host name
	// (httpserve.Options.Hosts).
	Hosts []string
	// Log receives refused requests (without the token; each kind once a
	// minute at most, with a count of the others). Nil discards.
	Log *slog.Logger
	// MaxConns bounds the connections open at once (one more waits),
	// MaxConnsPerClient those from one address (one more is refused);
	// 0 takes DefaultMaxConns, DefaultMaxConnsPerClient.
	MaxConns, MaxConnsPerClient int
	// MaxSessions bounds the sessions open at once (one more is refused
	// with 503) and SessionTimeout closes one that sent no request for
	// that long; 0 takes DefaultMaxSessions, DefaultSessionTimeout.
	MaxSessions    int
	SessionTimeout time.Duration
}

// Defaults of HTTPOptions (the config's mcp.serve has the same).
const (
	DefaultMaxConns          = 64
	DefaultMaxConnsPerClient = 16
	DefaultMaxSessions       = 64
	DefaultSessionTimeout    = 30 * time.Minute
)

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConnsPerClient <= 0 {
		o.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	return o
}

// refusalLogPeriod is how often each kind of refused request is logged at
// most (the others are counted in the next line).
const refusalLogPeriod = time.Minute

// handler returns the Streamable HTTP endpoint (served at Path); refused
// requests go to logs.
func (s *Server) handler(o HTTPOptions, logs *lograte.Limiter) http.Handler {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		Logger:         quietlog.For(o.Log, "go-sdk"),
		SessionTimeout: o.SessionTimeout,
		// internal/httpserve refuses a foreign Host on every address; the
		// SDK's own check (loopback only) would refuse the owner's names
		// (mcp.serve.hosts, the host name Debian maps to 127.0.1.1).
		DisableLocalhostProtection: true,
	})
	h = (&sessionGate{srv: s.srv, max: o.MaxSessions, timeout: o.SessionTimeout, logs: logs}).wrap(h)
	allowed := map[string]bool{}
	for _, a := range o.AllowedOrigins {
		allowed[strings.TrimSuffix(strings.ToLower(a), "/")] = true
	}
	var want [32]byte
	if o.Token != "" {
		want = sha256.Sum256([]byte(o.Token))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !localOrigin(origin) && !allowed[strings.ToLower(origin)] {
			logs.Warn("refused an MCP request from a foreign origin", "origin", clip.String(origin, 100), "remote", r.RemoteAddr)
			http.Error(w, "Forbidden: origin "+clip.String(origin, 100)+" is not allowed", http.StatusForbidden)
			return
		}
		if o.Token != "" {
			got, ok := bearer(r.Header.Get("Authorization"))
			// Hashing first makes the comparison constant-time in the
			// token's length too.
			sum := sha256.Sum256([]byte(got))
			if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
				logs.Warn("refused an MCP request without the right bearer token", "remote", r.RemoteAddr, "had_authorization", r.Header.Get("Authorization") != "")
				w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <token> (mcp.serve.token in the config)", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// bearer takes the token out of an Authorization header.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// localOrigin reports whether an Origin is this machine's: localhost,
// 127.0.0.0/8 or ::1, any scheme and port.
func localOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return httpserve.LocalName(u.Hostname())
}

// Serve serves the endpoint at Path on ln until ctx ends, then shuts
// down (open streams are closed). The caller chooses the address; a
// non-loopback address without a token is allowed but logged as a warning.
// Connections are bounded and deadlined as internal/httpserve does.
func (s *Server) Serve(ctx context.Context, ln net.Listener, o HTTPOptions) error {
	o = o.withDefaults()
	hs := httpserve.Options{
		Name:     "the MCP endpoint",
		MaxConns: o.MaxConns, MaxConnsSetting: "mcp.serve.max_connections",
		MaxConnsPerClient: o.MaxConnsPerClient, MaxConnsPerClientSetting: "mcp.serve.max_connections_per_client",
		Hosts: o.Hosts, HostsSetting: "mcp.serve.hosts",
		Log: o.Log,
	}
	if o.Token == "" {
		hs.ExposedWarning = "the MCP endpoint listens beyond this machine without a token: anyone who can reach it can call every service"
	}
	logs := lograte.New(o.Log, refusalLogPeriod)
	defer logs.Stop()
	mux := http.NewServeMux()
	mux.Handle(Path, s.handler(o, logs))
	o.Log.Info("MCP endpoint ready", "url", fmt.Sprintf("http://%s%s", ln.Addr(), Path), "token", o.Token != "")
	return httpserve.Serve(ctx, ln, mux, hs)
}
