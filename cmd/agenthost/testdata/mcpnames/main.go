// Command mcpnames is a small MCP stdio server written with the go-sdk, for
// the end-to-end tests of name ownership, register bounds and late servers:
// it offers tools whose answer names the server, may wait for a file
// before it answers anything, and may offer tools with long descriptions.
//
//	mcpnames -name one [-tools shared,only_one] [-hold FILE] [-big BYTES] [-many N -many-desc BYTES]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	name := flag.String("name", "mcpnames", "who answers: every tool returns this")
	tools := flag.String("tools", "shared", "comma-separated tool names; each description says which server offers it")
	hold := flag.String("hold", "", "answer nothing (initialize included) until this file exists")
	big := flag.Int("big", 0, "also offer the tool huge with a description of this many bytes")
	many := flag.Int("many", 0, "also offer this many tools many_000, many_001, …")
	manyDesc := flag.Int("many-desc", 1000, "the description size of each many_ tool, in bytes")
	flag.Parse()
	log.SetFlags(0)
	log.SetOutput(os.Stderr)
	if *hold != "" {
		log.Printf("mcpnames %s: holding until %s exists", *name, *hold)
		for {
			if _, err := os.Stat(*hold); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpnames-" + *name, Version: "0.1.0"}, &mcp.ServerOptions{HasTools: true})
	answer := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: *name}}}, nil
	}
	add := func(tool, desc string) {
		s.AddTool(&mcp.Tool{Name: tool, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}, answer)
	}
	for _, t := range strings.Split(*tools, ",") {
		if t != "" {
			add(t, fmt.Sprintf("%s, offered by %s.", t, *name))
		}
	}
	if *big > 0 {
		add("huge", strings.Repeat("d", *big))
	}
	for i := range *many {
		add(fmt.Sprintf("many_%03d", i), strings.Repeat("m", *manyDesc))
	}
	log.Printf("mcpnames %s: serving on stdio", *name)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && err != io.EOF {
		log.Printf("mcpnames %s: %v", *name, err)
	}
}
