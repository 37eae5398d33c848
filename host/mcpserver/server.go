// Package mcpserver owns the host's face as a standard MCP server: the
// merged service set (plugins, MCP servers, built-ins) offered as MCP tools
// over stdio (`agenthost mcp`) or Streamable HTTP, each call going through
// the host's own dispatch (a Caller), and tools/list_changed sent whenever
// the set changes.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/quietlog"
	"github.com/agenthost/agenthost/proto/voice"
)

// Caller runs one call through the host's dispatch (validation, policy,
// deadlines, result cap, logs): the host's CallLocal, or a daemon's
// POST /v1/call.
type Caller interface {
	Call(ctx context.Context, service string, params json.RawMessage) voice.Outcome
}

// CallerFunc adapts a function to Caller.
type CallerFunc func(ctx context.Context, service string, params json.RawMessage) voice.Outcome

// Call implements Caller.
func (f CallerFunc) Call(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
	return f(ctx, service, params)
}

type sessionKey struct{}

// SessionID is the MCP session a Caller's call comes from: its
// Mcp-Session-Id over Streamable HTTP, "" on stdio. A Caller bounds the
// calls of one session with it.
func SessionID(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// Tool is one service as the MCP server offers it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Catalog is the set of services to offer and a way to hear of changes.
type Catalog interface {
	Tools() []Tool
	// Subscribe returns a channel that receives a (coalesced) signal when
	// Tools may have changed, and a function that ends the subscription.
	Subscribe() (<-chan struct{}, func())
}

// RegistryCatalog offers a registry's merged set.
func RegistryCatalog(r *services.Registry) Catalog { return registryCatalog{r} }

type registryCatalog struct{ r *services.Registry }

func (c registryCatalog) Tools() []Tool {
	entries := c.r.Entries()
	out := make([]Tool, 0, len(entries))
	for _, e := range entries {
		out = append(out, Tool{Name: e.Name, Description: e.Service.Description, Parameters: e.Service.Parameters})
	}
	return out
}

func (c registryCatalog) Subscribe() (<-chan struct{}, func()) { return c.r.Subscribe() }

// Options configures a Server.
type Options struct {
	// Name and Version go into serverInfo ("agenthost", "dev" by default).
	Name, Version string
	// Log receives the server's lines; the caller adds component=…. Nil
	// discards.
	Log *slog.Logger
}

// Server is the host as an MCP server. It keeps its tools in step with the
// Catalog while Run runs.
type Server struct {
	cat    Catalog
	caller Caller
	log    *slog.Logger
	srv    *mcp.Server

	mu      sync.Mutex
	offered map[string][]byte // name → the tool as offered (JSON), to find changes
}

// New returns a server offering the catalog's tools now; Run keeps them
// current.
func New(cat Catalog, caller Caller, o Options) *Server {
	if o.Name == "" {
		o.Name = "agenthost"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cat: cat, caller: caller, log: o.Log, offered: map[string][]byte{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: o.Name, Title: "agenthost: the speaker's services", Version: o.Version}, &mcp.ServerOptions{
		Logger: quietlog.For(o.Log, "go-sdk"),
		// Tools (with listChanged) are announced even while the set is empty.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Instructions: "These tools are the services of a voice speaker (agenthost): its plugins, " +
			"the MCP servers it uses and its built-ins. Each call runs on the speaker.",
	})
	s.sync()
	return s
}

// Run keeps the tools in step with the catalog until ctx ends. Clients
// get one tools/list_changed per change (the go-sdk coalesces a burst).
func (s *Server) Run(ctx context.Context) {
	ch, cancel := s.cat.Subscribe()
	defer cancel()
	s.sync() // what changed between New and the subscription
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			s.sync()
		}
	}
}

// sync adds, replaces and removes tools so the server offers the catalog.
func (s *Server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]Tool{}
	for _, t := range s.cat.Tools() {
		want[t.Name] = t
	}
	var gone []string
	for name := range s.offered {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, n := range gone {
			delete(s.offered, n)
		}
	}
	names := slices.Sorted(maps.Keys(want))
	added := 0
	for _, n := range names {
		t := want[n]
		tool, err := toMCPTool(t)
		if err != nil {
			s.log.Warn("a service is not offered over MCP", "service", n, "err", err)
			continue
		}
		b, _ := json.Marshal(tool)
		if bytes.Equal(b, s.offered[n]) {
			continue
		}
		if err := s.addTool(tool); err != nil {
			s.log.Warn("a service is not offered over MCP", "service", n, "err", err)
			continue
		}
		s.offered[n] = b
		added++
	}
	if added > 0 || len(gone) > 0 {
		s.log.Debug("MCP tools updated", "tools", len(s.offered), "added_or_changed", added, "removed", len(gone))
	}
}

// addTool adds one tool; the go-sdk panics on schemas it refuses, which
// must not take the host down.
func (s *Server) addTool(tool *mcp.Tool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	name := tool.Name
	s.srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		if req.Session != nil {
			ctx = context.WithValue(ctx, sessionKey{}, req.Session.ID())
		}
		return Result(s.caller.Call(ctx, name, args)), nil
	})
	return nil
}

// toMCPTool turns a service into an MCP tool. The input schema must say
// "type": "object" for MCP; a service schema that leaves it out (the
// registry allows that) gets it.
func toMCPTool(t Tool) (*mcp.Tool, error) {
	params := bytes.TrimSpace(t.Parameters)
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		params = []byte(`{"type":"object"}`)
	}
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, fmt.Errorf("its parameters are not a JSON object: %v", err)
	}
	switch typ := m["type"].(type) {
	case nil:
		m["type"] = "object"
	case string:
		if typ != "object" {
			return nil, fmt.Errorf("its parameters describe a %s, not an object", typ)
		}
	default:
		m["type"] = "object" // ["object", …]: call params are always an object
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(b)}, nil
}

// Result maps a call's outcome to a CallToolResult: success data as text
// (a JSON string as its text, anything else as JSON), plus
// structuredContent when the data is a JSON object; a failure as isError
// with the message.
func Result(out voice.Outcome) *mcp.CallToolResult {
	if !out.Success {
		msg := out.Error
		if msg == "" {
			msg = "the call failed"
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
	}
	data := bytes.TrimSpace(out.Data)
	text := string(data)
	var str string
	if len(data) > 0 && data[0] == '"' && json.Unmarshal(data, &str) == nil {
		text = str
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if len(data) > 0 && data[0] == '{' && json.Valid(data) {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// ServeStdio serves one MCP client on in/out (newline-delimited JSON-RPC)
// until the client closes in or out, or ctx ends. Nothing else may write
// to out.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopCloser{out}})
	if err == nil || ctx.Err() != nil || hungUp(err) {
		return nil
	}
	return err
}

// hungUp reports whether err says the client closed its end (a pipe's read
// or write end, or stdout as a desktop client's pipe): the session's end.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// MCPServer returns the go-sdk server, for a caller that serves it over a
// transport of its own.
func (s *Server) MCPServer() *mcp.Server { return s.srv }
