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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/clip"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/quietlog"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultKillGrace    = 2 * time.Second
	DefaultMaxLine      = 16 << 20
	listTimeout         = 30 * time.Second
	maxPages            = 100
)

// Options configures the sessions of one MCP server.
type Options struct {
	// Name is the server's name (the key in mcpServers); it names the
	// provider mcp:<name> and goes into every log line as mcp=<name>.
	Name   string
	Server ServerConfig
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
	// MaxLine bounds one JSON-RPC message from a stdio server (16 MiB).
	MaxLine int
	// ProtocolVersion is the MCP version proposed at initialize; empty
	// proposes the newest the go-sdk speaks (the server may pick an older one).
	ProtocolVersion string
	// HTTPClient is the base client for HTTP servers (http.DefaultTransport
	// when nil); the configured headers are added to every request.
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
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
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
	s.status = Status{Name: o.Name, Transport: kind, URL: redactURL(o.Server.URL)}
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
				s.log.Info("the server does not speak Streamable HTTP; using the legacy SSE transport", "url", redactURL(o.Server.URL), "streamable_err", err)
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
	p, err := startProcess(s.o.Name, s.o.Server, s.log, s.o.MaxLine)
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
	hc := *base
	hc.Transport = headerRT{base: rt, headers: s.o.Server.Headers}
	var t mcp.Transport
	if kind == TransportSSE {
		t = &mcp.SSEClientTransport{Endpoint: s.o.Server.URL, HTTPClient: &hc}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: s.o.Server.URL, HTTPClient: &hc, MaxRetries: 2}
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
		return s.explain(s.scrub(fmt.Errorf("%s at %s: initialize failed: %w", kind, redactURL(s.o.Server.URL), err)), ctx)
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

// poke asks the refresh loop to list again.
func (s *Session) poke(what string) {
	s.mu.Lock()
	s.pending[what] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
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

// listTools takes the server's tools (all pages), reduces them, and stores
// the result; it reports whether the registered set changed. Problems are
// logged when they are new.
func (s *Session) listTools(ctx context.Context) (bool, error) {
	var tools []*mcp.Tool
	params := &mcp.ListToolsParams{}
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxPages {
			return false, fmt.Errorf("more than %d pages of tools", maxPages)
		}
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return false, err
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return false, fmt.Errorf("the server repeats the page cursor %q", clip.String(res.NextCursor, 40))
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	svcs, left := s.reduceTools(tools)
	canonical, _ := json.Marshal(svcs)
	names := make([]string, len(svcs))
	for i, sv := range svcs {
		names[i] = sv.Name
	}
	s.mu.Lock()
	prevLeft := s.status.LeftOut
	changed := !bytes.Equal(canonical, s.canonical)
	s.svcs, s.canonical = svcs, canonical
	s.status.Tools, s.status.LeftOut = names, left
	s.mu.Unlock()
	for _, l := range left {
		known := false
		for _, p := range prevLeft {
			known = known || p == l
		}
		if !known {
			s.log.Warn("an MCP tool is left out", "tool", l.Tool, "reason", l.Reason)
		}
	}
	return changed, nil
}

// reduceTools turns tools into services, sorted by name, and lists those
// left out with the reason.
func (s *Session) reduceTools(tools []*mcp.Tool) ([]services.Service, []LeftOut) {
	var svcs []services.Service
	var left []LeftOut
	taken := map[string]bool{}
	for _, t := range tools {
		if t == nil {
			continue
		}
		if !s.wanted(t.Name) {
			continue
		}
		if !services.ValidName(t.Name) || !services.ValidName(s.o.Server.Prefix+t.Name) {
			left = append(left, LeftOut{Tool: clip.String(t.Name, 80), Reason: fmt.Sprintf("the name (with prefix %q) must be 1 to 64 letters, digits, '_', '.' or '-'", s.o.Server.Prefix)})
			continue
		}
		if taken[t.Name] {
			left = append(left, LeftOut{Tool: t.Name, Reason: "the server lists this name twice"})
			continue
		}
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			left = append(left, LeftOut{Tool: t.Name, Reason: "inputSchema: " + err.Error()})
			continue
		}
		params, err := ReduceSchema(raw)
		if err != nil {
			left = append(left, LeftOut{Tool: t.Name, Reason: err.Error()})
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" && t.Annotations != nil {
			desc = t.Annotations.Title
		}
		taken[t.Name] = true
		svcs = append(svcs, services.Service{Name: t.Name, Description: desc, Parameters: params, Timeout: s.o.Server.Timeout.D()})
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	sort.Slice(left, func(i, j int) bool { return left[i].Tool < left[j].Tool })
	return svcs, left
}

// wanted applies allowed_tools and excluded_tools.
func (s *Session) wanted(name string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, err := path.Match(p, name); p == name || (err == nil && ok) {
				return true
			}
		}
		return false
	}
	if len(s.o.Server.AllowedTools) > 0 && !match(s.o.Server.AllowedTools) {
		return false
	}
	return !match(s.o.Server.ExcludedTools)
}

// listOthers lists resources, resource templates and prompts for Status,
// when the server has them. Failures are logged, not fatal.
func (s *Session) listOthers(ctx context.Context) {
	res := s.cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return
	}
	caps := res.Capabilities
	var resources, templates []Resource
	var prompts []Prompt
	if caps.Resources != nil {
		for r, err := range s.cs.Resources(ctx, nil) {
			if err != nil {
				s.log.Info("resources/list failed", "err", s.scrub(err))
				break
			}
			resources = append(resources, Resource{URI: r.URI, Name: r.Name, MIMEType: r.MIMEType})
			if len(resources) >= 1000 {
				break
			}
		}
		for r, err := range s.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				s.log.Debug("resources/templates/list failed", "err", s.scrub(err))
				break
			}
			templates = append(templates, Resource{URI: r.URITemplate, Name: r.Name, MIMEType: r.MIMEType})
			if len(templates) >= 1000 {
				break
			}
		}
	}
	if caps.Prompts != nil {
		for p, err := range s.cs.Prompts(ctx, nil) {
			if err != nil {
				s.log.Info("prompts/list failed", "err", s.scrub(err))
				break
			}
			pr := Prompt{Name: p.Name, Description: p.Description}
			for _, a := range p.Arguments {
				if a != nil {
					pr.Arguments = append(pr.Arguments, a.Name)
				}
			}
			prompts = append(prompts, pr)
			if len(prompts) >= 1000 {
				break
			}
		}
	}
	s.mu.Lock()
	s.status.Resources, s.status.ResourceTemplates, s.status.Prompts = resources, templates, prompts
	s.mu.Unlock()
}

// Services implements supervise.Child.
func (s *Session) Services() []services.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]services.Service(nil), s.svcs...)
}

// Call implements supervise.Child: tools/call, with the result mapped.
func (s *Session) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	select {
	case <-s.done:
		return nil, fmt.Errorf("mcp server %s: %w", s.o.Name, supervise.ErrGone)
	default:
	}
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{}`)
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: method, Arguments: params})
	if err != nil {
		return nil, s.scrub(s.callError(ctx, err))
	}
	return mapResult(method, res)
}

// unreachable reports whether err says nothing answers at the address
// (so trying the legacy SSE transport there is pointless).
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial")
}

// callError classifies a failed tools/call.
func (s *Session) callError(ctx context.Context, err error) error {
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		return errors.New(je.Message)
	case ctx.Err() != nil:
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	gone := errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	var ne net.Error
	gone = gone || errors.As(err, &ne)
	select {
	case <-s.done:
		gone = true
	default:
	}
	if gone {
		return fmt.Errorf("mcp server %s: %w: %v", s.o.Name, supervise.ErrGone, err)
	}
	return fmt.Errorf("mcp server %s: tools/call failed: %w", s.o.Name, err)
}

// mapResult turns a CallToolResult into the result's data: the structured
// content as JSON when there is some, else the text content joined with
// newlines, as a JSON string. isError becomes an error with the text.
func mapResult(method string, res *mcp.CallToolResult) (json.RawMessage, error) {
	if res == nil {
		return json.RawMessage(`""`), nil
	}
	if res.IsError {
		text := strings.TrimSpace(joinContent(res.Content))
		if text == "" {
			text = method + " failed (the MCP server gave no message)"
		}
		return nil, errors.New(text)
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("%s: the structured content cannot be encoded: %v", method, err)
		}
		return b, nil
	}
	b, err := json.Marshal(joinContent(res.Content))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// joinContent renders content blocks as text, one per line; what is not
// text (images, audio, binary resources) is named, not included.
func joinContent(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			if c.Resource.Text != "" || len(c.Resource.Blob) == 0 {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s (%s), %d bytes not shown]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image (%s), %d bytes not shown]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s), %d bytes not shown]", c.MIMEType, len(c.Data)))
		default:
			parts = append(parts, fmt.Sprintf("[%T not shown]", c))
		}
	}
	return strings.Join(parts, "\n")
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

// headerRT adds the configured headers to every request.
type headerRT struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// scrub replaces the configured URL, which may carry a token in its query
// or user information, with its redacted form in an error's text.
func (s *Session) scrub(err error) error { return scrubURL(err, s.o.Server.URL) }

// scrubURL hides the secrets of the URL raw (its password and query
// values) wherever err's message shows them: the URL as configured, as
// net/http prints it (password masked, query kept), or in parts.
func scrubURL(err error, raw string) error {
	if err == nil || raw == "" {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), raw, redactURL(raw))
	if u, perr := url.Parse(raw); perr == nil {
		var secrets []string
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for _, vs := range u.Query() {
			secrets = append(secrets, vs...)
		}
		for _, q := range strings.Split(u.RawQuery, "&") {
			if _, v, ok := strings.Cut(q, "="); ok {
				secrets = append(secrets, v) // as written, escapes and all
			}
		}
		for _, v := range secrets {
			if len(v) >= 4 { // shorter values are not secrets, and would mask common words
				msg = strings.ReplaceAll(msg, v, "***")
				msg = strings.ReplaceAll(msg, url.QueryEscape(v), "***")
			}
		}
	}
	if msg == err.Error() {
		return err
	}
	return scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }

// redactURL hides user information and query values (tokens) in a URL.
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(an invalid URL)"
	}
	if u.User != nil {
		u.User = url.User("***")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"***"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
