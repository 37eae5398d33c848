package mcpservers

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcpclient"
)

// TestProviderOrder: built-ins, plugins, mcp.servers in the YAML's order,
// then mcp.servers_file's in that file's order, then any other by name.
func TestProviderOrder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(file, []byte(`{"other": 1, "mcpServers": {"yankee": {"command": "y"}, "bravo": {"command": "b"}}}`), 0o600)
	cfg := config.Default()
	cfg.MCP.Order = []string{"zulu", "alpha"}
	cfg.MCP.ServersFile = file
	servers := map[string]mcpclient.ServerConfig{}
	for _, name := range []string{"alpha", "bravo", "extra", "yankee", "zulu"} {
		servers[name] = mcpclient.ServerConfig{Command: name}
	}
	want := []string{"builtin", "plugin:", "mcp:zulu", "mcp:alpha", "mcp:yankee", "mcp:bravo", "mcp:extra"}
	if got := Order(cfg, servers); !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}
