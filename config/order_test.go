package config

import (
	"slices"
	"strings"
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

// TestRegisterBoundsAreChecked: services.max_description and
// services.max_register have defaults, and values that could never work
// are refused with the key named.
func TestRegisterBoundsAreChecked(t *testing.T) {
	c := mustLoad(t, "", nil)
	if c.Services.MaxDescription != 8<<10 || c.Services.MaxRegister != 512<<10 {
		t.Errorf("defaults %d, %d", c.Services.MaxDescription, c.Services.MaxRegister)
	}
	for body, want := range map[string]string{
		"services: {max_description: 0}":                        "services.max_description: must be at least 16 bytes",
		"services: {max_register: 1KiB}":                        "services.max_register: must be at least 4KiB",
		"services: {max_register: 8KiB, max_description: 1MiB}": "services.max_description: is more than services.max_register",
	} {
		_, err := Load(writeConfig(t, body+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
