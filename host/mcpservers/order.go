package mcpservers

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/mcpclient"
)

// Order ranks the providers for the registry (which owns a
// clashing name, and what a full register leaves out): the built-ins, the
// plugins (by name), then the MCP servers in the order the configuration
// lists them: mcp.servers as the YAML file has them, then those of
// mcp.servers_file as that file has them; any other provider comes last.
func Order(cfg *config.Config, servers map[string]mcpclient.ServerConfig) []string {
	out := []string{builtin.ID, "plugin:"}
	seen := map[string]bool{}
	add := func(name string) {
		if _, ok := servers[name]; ok && !seen[name] {
			seen[name] = true
			out = append(out, mcpclient.ProviderID(name))
		}
	}
	for _, name := range cfg.MCP.Order {
		add(name)
	}
	if cfg.MCP.ServersFile != "" {
		for _, name := range serversFileOrder(cfg.MCP.ServersFile) {
			add(name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		add(name)
	}
	return out
}

// serversFileOrder lists the server names of a desktop client's JSON file
// in the order the file has them (mcpServers, VS Code's servers, or the
// servers at the top level, as mcpclient.ParseServersJSON reads it); nil
// when it cannot be read (the servers then rank by name).
func serversFileOrder(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	for _, key := range []string{"mcpServers", "servers"} {
		if raw, ok := top[key]; ok {
			return objectKeys(raw)
		}
	}
	return objectKeys(data)
}

// objectKeys lists a JSON object's keys in order.
func objectKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		key, _ := t.(string)
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return keys
		}
		keys = append(keys, key)
	}
	return keys
}
