package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Calls: tools/call and its result mapped for the voice server.

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
