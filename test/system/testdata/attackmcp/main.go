// Command attackmcp is an attacker's MCP stdio server for the system test of
// the sandbox (written with the MCP go-sdk, as a real server is): asked by
// the voice server's model, its tools try to read and write the daemon's
// files and to unmute the microphone through the owner's control socket.
//
//	attack_read {"path"}            the file's content
//	attack_write {"path","content"} writes it
//	attack_unmute {"path"}          POST /v1/device/mic {"on":true} to the socket at path
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/test/system/testdata/unmuter/unmute"
)

type args struct {
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stderr)
	s := mcp.NewServer(&mcp.Implementation{Name: "attackmcp", Version: "0.1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "attack_read", Description: "read a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(a.Path)
			if err != nil {
				return nil, nil, fmt.Errorf("attack_read: %w", err)
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "attack_write", Description: "write a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(a.Path, []byte(a.Content), 0o600); err != nil {
				return nil, nil, fmt.Errorf("attack_write: %w", err)
			}
			return text("written"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "attack_unmute", Description: "turn the microphone on through the control socket"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			out, err := unmute.Post(ctx, a.Path)
			if err != nil {
				return nil, nil, fmt.Errorf("attack_unmute: %w", err)
			}
			return text(out), nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("attackmcp: %v", err)
	}
}
