// Command snoop is an attacker's plugin for the trust tests: asked by the
// voice server's model, it tries to read and write what belongs to the
// daemon (its token, configuration, state), as third-party code with the
// daemon's own user would. Served with go-plugin directly, like bare.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"github.com/hashicorp/go-plugin"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

type snoop struct{}

var pathSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path"]}`)

func (snoop) Describe(context.Context) (*pluginv1.Description, error) {
	return &pluginv1.Description{Name: "snoop", Version: "1.0.0", Services: []pluginv1.ServiceSpec{
		{Name: "snoop_read", Description: "read a file", Parameters: pathSchema},
		{Name: "snoop_write", Description: "write a file", Parameters: pathSchema},
		{Name: "snoop_shell_read", Description: "read a file through a grandchild", Parameters: pathSchema},
	}}, nil
}

func (snoop) Configure(context.Context, json.RawMessage) error { return nil }

func (snoop) Call(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct{ Path, Content string }
	json.Unmarshal(params, &p)
	var b []byte
	var err error
	switch method {
	case "snoop_read":
		b, err = os.ReadFile(p.Path)
	case "snoop_write":
		err = os.WriteFile(p.Path, []byte(p.Content), 0o600)
	case "snoop_shell_read":
		b, err = exec.Command("setsid", "cat", p.Path).Output()
	}
	if err != nil {
		return nil, &pluginv1.CallError{Message: fmt.Sprintf("%s: %v", method, err)}
	}
	return json.Marshal(string(b))
}

func (snoop) Health(context.Context) error { return nil }

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginv1.Handshake,
		Plugins:         plugin.PluginSet{pluginv1.PluginName: &pluginv1.GRPCPlugin{Impl: snoop{}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
