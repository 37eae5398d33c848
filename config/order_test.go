package config

import (
	"slices"
	"testing"
)

// TestMCPOrderFollowsTheFile: MCP servers are ranked in the order the file
// lists them (under mcp.servers or the mcpServers alias), servers set only
// by --set after them; a reload that only reorders them is a change.
func TestMCPOrderFollowsTheFile(t *testing.T) {
	for name, body := range map[string]string{
		"mcp.servers": "mcp:\n  servers:\n    zulu: {command: z}\n    alpha: {command: a}\n    mid: {command: m}\n",
		"mcpServers":  "mcpServers:\n  zulu: {command: z}\n  alpha: {command: a}\n  mid: {command: m}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := mustLoad(t, writeConfig(t, body), map[string]any{"mcp.servers.added.command": "x"})
			if want := []string{"zulu", "alpha", "mid", "added"}; !slices.Equal(c.MCP.Order, want) {
				t.Errorf("order %q, want %q", c.MCP.Order, want)
			}
		})
	}
	a := mustLoad(t, writeConfig(t, "mcpServers:\n  zulu: {command: z}\n  alpha: {command: a}\n"), nil)
	b := mustLoad(t, writeConfig(t, "mcpServers:\n  alpha: {command: a}\n  zulu: {command: z}\n"), nil)
	if got := Changed(a, b); !slices.Equal(got, []string{"mcp.servers"}) {
		t.Errorf("a reorder: Changed = %q, want mcp.servers", got)
	}
	if got := Changed(a, a); len(got) != 0 {
		t.Errorf("no change: Changed = %q", got)
	}
}
