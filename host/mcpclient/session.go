// Package mcpclient owns the host's side of a standard MCP server that
// lends tools to the voice server: connecting to it (a program over stdio,
// or an address over Streamable HTTP with the legacy SSE fallback),
// initializing, listing its tools with their schemas reduced to what the
// voice server accepts, running calls and mapping results, following
// tools/list_changed, and answering the server's own requests (roots; no
// sampling, no elicitation). One connected server is a Session, which is a
// supervise.Child: the supervisor restarts and parks it like a plugin.
package mcpclient

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/pace"
	"github.com/agenthost/agenthost/internal/quietlog"
	"github.com/agenthost/agenthost/internal/urlmask"
)

// MinRelistInterval is the least time between two lists taken after
// list_changed notifications; those that come sooner are folded into one.
const MinRelistInterval = 250 * time.Millisecond

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultKillGrace    = 2 * time.Second
	DefaultMaxMessage   = 16 << 20
	listTimeout         = 30 * time.Second
	maxPages            = 100
)

// Options configures the sessions of one MCP server.
type Options struct {
	// Name is the server's name (the key in mcpServers); it names the
	// provider mcp:<name> and goes into every log line as mcp=<name>.
	Name   string
	Server ServerConfig
	// Jail confines a stdio server (config.Config.Jail); Home is its own
	// folder, its HOME and TMPDIR, the one it may write besides its grant.
	Jail sandbox.Jail
	Home string
	// Log receives the session's lines (with mcp=<name>) and the server's
	// stderr (with stream=stderr). Nil discards.
	Log *slog.Logger
	// Version is agenthost's version, sent as clientInfo.
	Version string
	// StartTimeout bounds a start when the Starter's ctx has no deadline.
	StartTimeout time.Duration
	// PingInterval is how often the session pings the server itself; two
	// failures in a row end the session. Zero or negative: never. Under a
	// supervisor, leave it off and set the supervisor's HealthInterval
	// instead (Session.Health is the same ping); an HTTP server that goes
	// away is noticed only by a ping or a failed call.
	PingInterval time.Duration
	// KillGrace is how long Kill waits after SIGTERM before SIGKILL.
	KillGrace time.Duration
	// MaxMessage bounds one JSON-RPC message from the server: a line on a
	// stdio server's stdout, an HTTP response body, one SSE event
	// (DefaultMaxMessage).
	MaxMessage int
	// ProtocolVersion is the MCP version proposed at initialize; empty
	// proposes the newest the go-sdk speaks (the server may pick an older one).
	ProtocolVersion string
	// HTTPClient is the base client for HTTP servers (http.DefaultTransport
	// when nil); the configured headers are added to every request to the
	// server's origin.
	HTTPClient *http.Client
}

// NewStarter checks the options and returns the Starter of the server's
// sessions: each call connects anew.
func NewStarter(o Options) (supervise.Starter, error) {
	if err := checkServerName(o.Name); err != nil {
		return nil, err
	}
	kind, err := o.Server.transport()
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", o.Name, err)
	}
	roots, err := rootsFrom(o.Server.Roots)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", o.Name, err)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	o.Log = o.Log.With("mcp", o.Name)
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return func(ctx context.Context) (supervise.Child, error) {
		s, err := start(ctx, o, kind, roots)
		if err != nil {
			err = scrubURL(err, o.Server.URL)
			o.Log.Warn("mcp server did not start", "err", err)
			return nil, err
		}
		return s, nil
	}, nil
}

// Session is one connected life of an MCP server. It implements
// supervise.Child.
type Session struct {
	o         Options
	log       *slog.Logger
	transport string
	client    *mcp.Client
	cs        *mcp.ClientSession
	proc      *process // stdio only

	done    chan struct{}
	changed chan struct{}
	wake    chan struct{} // a list_changed arrived
	killing chan struct{} // closed when Kill starts
	stop    context.CancelFunc
	// connCancel ends an HTTP connection's context (see connectHTTP).
	connCancel context.CancelFunc
	relist     *pace.Pacer // wakes refresh, at most once per MinRelistInterval
	kill       sync.Once
	ended      sync.Once

	mu        sync.Mutex
	svcs      []services.Service
	canonical []byte
	status    Status
	pending   map[string]bool // lists to refresh: "tools", "resources", "prompts"
	endErr    error
}

// LeftOut is a tool the server offers that is not registered, and why.
type LeftOut struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Resource is a resource or resource template the server lists.
type Resource struct {
	URI      string `json:"uri"`
	Name     string `json:"name,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
}

// Prompt is a prompt the server lists.
type Prompt struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Arguments   []string `json:"arguments,omitempty"`
}

// Status describes a session for `agenthost status`.
type Status struct {
	Name              string     `json:"name"`
	Transport         string     `json:"transport"`
	PID               int        `json:"pid,omitempty"`
	URL               string     `json:"url,omitempty"`
	ServerName        string     `json:"server_name,omitempty"`
	ServerVersion     string     `json:"server_version,omitempty"`
	ProtocolVersion   string     `json:"protocol_version,omitempty"`
	Tools             []string   `json:"tools"`
	LeftOut           []LeftOut  `json:"left_out,omitempty"`
	Resources         []Resource `json:"resources,omitempty"`
	ResourceTemplates []Resource `json:"resource_templates,omitempty"`
	Prompts           []Prompt   `json:"prompts,omitempty"`
	// ListChanged counts the tools/list_changed notifications received;
	// Relisted the tool lists taken after them.
	ListChanged int `json:"list_changed"`
	Relisted    int `json:"relisted"`
}

// start connects, initializes and lists; on any failure it leaves nothing
// running.
func start(ctx context.Context, o Options, kind string, roots rootList) (*Session, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.StartTimeout)
		defer cancel()
	}
	s := &Session{
		o: o, log: o.Log, transport: kind,
		done: make(chan struct{}), changed: make(chan struct{}, 1), wake: make(chan struct{}, 1), killing: make(chan struct{}),
		pending: map[string]bool{},
	}
	s.relist = pace.New(MinRelistInterval, func() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
	s.status = Status{Name: o.Name, Transport: kind, URL: urlmask.String(o.Server.URL)}
	s.client = s.newClient(roots)

	var err error
	switch kind {
	case TransportStdio:
		err = s.connectStdio(ctx)
	case TransportSSE:
		err = s.connectHTTP(ctx, TransportSSE)
	default:
		err = s.connectHTTP(ctx, TransportStreamable)
		if err != nil && ctx.Err() == nil && o.Server.Type == "" && !unreachable(err) {
			// The server may speak only the legacy HTTP+SSE transport.
			if sseErr := s.connectHTTP(ctx, TransportSSE); sseErr == nil {
				s.log.Info("the server does not speak Streamable HTTP; using the legacy SSE transport", "url", urlmask.String(o.Server.URL), "streamable_err", err)
				err = nil
			} else {
				err = fmt.Errorf("%w; and as a legacy SSE server: %v", err, sseErr)
			}
		}
		if err != nil {
			err = fmt.Errorf("mcp server %s: %w", o.Name, err)
		}
	}
	if err != nil {
		return nil, err
	}
	res := s.cs.InitializeResult()
	if res != nil {
		if res.ServerInfo != nil {
			s.status.ServerName, s.status.ServerVersion = res.ServerInfo.Name, res.ServerInfo.Version
		}
		s.status.ProtocolVersion = res.ProtocolVersion
	}
	if _, err := s.listTools(ctx); err != nil {
		s.abort()
		return nil, s.explain(s.scrub(fmt.Errorf("mcp server %s: tools/list failed: %w", o.Name, err)), ctx)
	}
	s.listOthers(ctx)

	s.log.Info("mcp server connected", "transport", s.transport, "server", s.status.ServerName, "version", s.status.ServerVersion,
		"protocol", s.status.ProtocolVersion, "tools", len(s.svcs), "left_out", len(s.status.LeftOut))
	runCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.watch()
	go s.refresh(runCtx)
	if o.PingInterval > 0 {
		go s.ping(runCtx)
	}
	return s, nil
}

// newClient builds the go-sdk client: roots only when configured,
// sampling and elicitation refused.
func (s *Session) newClient(roots rootList) *mcp.Client {
	caps := roots.capabilities() // no sampling, no elicitation
	c := mcp.NewClient(&mcp.Implementation{Name: "agenthost", Version: s.o.Version}, &mcp.ClientOptions{
		Logger:       quietlog.For(s.log, "go-sdk"),
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.mu.Lock()
			s.status.ListChanged++
			s.mu.Unlock()
			s.poke("tools")
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.poke("resources") },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.poke("prompts") },
	})
	roots.add(c)
	c.AddReceivingMiddleware(s.refuse)
	return c
}

// codeUnsupported is the go-sdk's own code for a request the client does
// not support; -32601 (method not found) would do, but the go-sdk replaces
// its message with "method not found", and the message is the point.
const codeUnsupported = -31001

// refuse answers the server's requests that a speaker cannot serve. (On
// protocol 2026-07-28 and later such requests ride on a tool's result
// instead; there the go-sdk refuses them itself, and servers must not ask
// a client that did not announce the capability anyway.)
func (s *Session) refuse(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var msg string
		switch method {
		case "sampling/createMessage":
			msg = "agenthost does not support sampling/createMessage: it has no local language model to lend to MCP servers"
		case "elicitation/create":
			msg = "agenthost does not support elicitation/create: it cannot ask its user for input on behalf of an MCP server"
		default:
			return next(ctx, method, req)
		}
		s.log.Info("refused a request from the server", "method", method)
		return nil, &jsonrpc.Error{Code: codeUnsupported, Message: msg}
	}
}

func (s *Session) connectStdio(ctx context.Context) error {
	p, err := startProcess(s.o, s.log)
	if err != nil {
		return fmt.Errorf("mcp server %s: %w", s.o.Name, err)
	}
	s.proc = p
	s.status.PID = p.pid()
	cs, err := s.client.Connect(ctx, &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: -1}, s.sessionOptions())
	if err != nil {
		p.kill(s.o.KillGrace)
		return s.explain(fmt.Errorf("mcp server %s (%s): initialize failed: %w", s.o.Name, s.o.Server.Command, err), ctx)
	}
	s.cs = cs
	return nil
}

func (s *Session) connectHTTP(ctx context.Context, kind string) error {
	base := s.o.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	origin, err := url.Parse(s.o.Server.URL)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", kind, urlmask.String(s.o.Server.URL), s.scrub(err))
	}
	hc := *base
	hc.Transport = guardRT{base: rt, origin: origin, headers: s.o.Server.Headers, maxBody: s.o.MaxMessage}
	var t mcp.Transport
	if kind == TransportSSE {
		t = &mcp.SSEClientTransport{Endpoint: s.o.Server.URL, HTTPClient: &hc, MaxEventSize: s.o.MaxMessage}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: s.o.Server.URL, HTTPClient: &hc, MaxRetries: 2, MaxEventSize: s.o.MaxMessage}
	}
	// The legacy SSE transport holds its event stream with the context given
	// to Connect: give it one that outlives the start, ended by Kill, and
	// cut short by the start deadline only while connecting.
	connCtx, connCancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, connCancel)
	cs, err := s.client.Connect(connCtx, t, s.sessionOptions())
	stop()
	if err != nil {
		connCancel()
		return s.explain(s.scrub(fmt.Errorf("%s at %s: initialize failed: %w", kind, urlmask.String(s.o.Server.URL), err)), ctx)
	}
	s.cs, s.transport, s.status.Transport, s.connCancel = cs, kind, kind, connCancel
	return nil
}

func (s *Session) sessionOptions() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: s.o.ProtocolVersion}
}

// explain adds the start deadline and what the process did to an error.
func (s *Session) explain(err error, ctx context.Context) error {
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		dl, _ := ctx.Deadline()
		err = fmt.Errorf("%w: the server did not answer in time (start deadline %s)", err, dl.Format(time.TimeOnly))
	}
	if s.proc != nil {
		err = s.proc.explain(err)
	}
	return err
}

// abort ends a session whose start failed after connecting.
func (s *Session) abort() {
	s.cs.Close()
	if s.connCancel != nil {
		s.connCancel()
	}
	if s.proc != nil {
		s.proc.kill(s.o.KillGrace)
	}
}

// watch closes done when the connection ends, for whatever reason, after
// making sure the process is gone too.
func (s *Session) watch() {
	err := s.cs.Wait()
	s.relist.Stop()
	if s.proc != nil {
		s.proc.kill(s.o.KillGrace)
	}
	s.mu.Lock()
	if s.endErr != nil {
		err = s.endErr
	}
	s.mu.Unlock()
	select {
	case <-s.killing:
		s.log.Info("mcp server disconnected")
	default:
		attrs := []any{"transport", s.transport}
		if err != nil {
			attrs = append(attrs, "err", s.scrub(err))
		}
		if s.proc != nil {
			if s.proc.waitErr != nil {
				attrs = append(attrs, "exit", s.proc.waitErr.Error())
			} else {
				attrs = append(attrs, "exit", "status 0")
			}
		}
		s.log.Warn("mcp server connection ended", attrs...)
	}
	close(s.done)
}

// end drops the connection because of err (a failed health check).
func (s *Session) end(err error) {
	s.ended.Do(func() {
		s.mu.Lock()
		s.endErr = err
		s.mu.Unlock()
		s.cs.Close()
	})
}

// poke asks the refresh loop to list again: at once, or, when it listed
// less than MinRelistInterval ago, once that has run out (a server that says
// list_changed in a loop does not keep a core busy listing).
func (s *Session) poke(what string) {
	s.mu.Lock()
	s.pending[what] = true
	s.mu.Unlock()
	s.relist.Signal()
}

// refresh lists again after list_changed notifications, coalescing them.
func (s *Session) refresh(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		tools, others := s.pending["tools"], s.pending["resources"] || s.pending["prompts"]
		delete(s.pending, "tools")
		delete(s.pending, "resources")
		delete(s.pending, "prompts")
		s.mu.Unlock()
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		if tools {
			changed, err := s.listTools(lctx)
			switch {
			case err != nil && ctx.Err() == nil:
				s.log.Warn("tools/list after list_changed failed; keeping the previous tools", "err", s.scrub(err))
			}
			s.mu.Lock()
			s.status.Relisted++
			s.mu.Unlock()
			if changed {
				s.log.Info("the server's tools changed", "tools", len(s.Services()))
				select {
				case s.changed <- struct{}{}:
				default:
				}
			}
		}
		if others {
			s.listOthers(lctx)
		}
		cancel()
	}
}

// ping checks a quiet connection; two failures in a row end it.
func (s *Session) ping(ctx context.Context) {
	t := time.NewTicker(s.o.PingInterval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, min(s.o.PingInterval, 10*time.Second))
		err := s.Health(pctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			failures = 0
			continue
		}
		failures++
		s.log.Warn("the server did not answer a ping", "err", err, "failures", failures)
		if failures >= 2 {
			s.end(fmt.Errorf("the server did not answer two pings in a row: %w", err))
			return
		}
	}
}

// Done implements supervise.Child.
func (s *Session) Done() <-chan struct{} { return s.done }

// Changed implements supervise.Child: a signal after list_changed when the
// registered set really changed.
func (s *Session) Changed() <-chan struct{} { return s.changed }

// Kill implements supervise.Child: it closes the connection, ends the
// process group (SIGTERM, then SIGKILL after KillGrace) and returns when
// nothing is left.
func (s *Session) Kill() {
	s.kill.Do(func() {
		close(s.killing)
		s.stop()
		s.relist.Stop()
		closed := make(chan struct{})
		go func() {
			s.cs.Close()
			close(closed)
		}()
		if s.proc != nil {
			s.proc.kill(s.o.KillGrace)
		}
		if s.connCancel != nil {
			defer s.connCancel()
		}
		select {
		case <-closed:
		case <-time.After(s.o.KillGrace):
			s.log.Warn("closing the connection took longer than the grace period; left to finish in the background")
		}
	})
	<-s.done
}

// Health implements supervise.Healther: a ping. An error answer is still
// an answer; no answer (or a broken connection) is an error.
func (s *Session) Health(ctx context.Context) error {
	select {
	case <-s.done:
		return fmt.Errorf("mcp server %s: %w", s.o.Name, supervise.ErrGone)
	default:
	}
	err := s.cs.Ping(ctx, nil)
	var je *jsonrpc.Error
	if err == nil || errors.As(err, &je) {
		return nil
	}
	return fmt.Errorf("the server did not answer a ping: %w", s.scrub(err))
}

// Info implements supervise.Child.
func (s *Session) Info() supervise.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return supervise.Info{PID: s.status.PID, Version: s.status.ServerVersion, Transport: s.status.Transport}
}

// Status describes the session: its server, tools (and those left out),
// resources and prompts.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Tools = append([]string{}, st.Tools...)
	st.LeftOut = append([]LeftOut(nil), st.LeftOut...)
	st.Resources = append([]Resource(nil), st.Resources...)
	st.ResourceTemplates = append([]Resource(nil), st.ResourceTemplates...)
	st.Prompts = append([]Prompt(nil), st.Prompts...)
	return st
}
