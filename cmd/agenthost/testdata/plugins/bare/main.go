// Command bare is a test plugin served with go-plugin directly, without
// plugins/sdk, so it has no watch on its parent process: when the host dies,
// only the host's own measures (Pdeathsig, stopping plugins on SIGTERM) end it.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"

	"github.com/hashicorp/go-plugin"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

type bare struct{}

func (bare) Describe(context.Context) (*pluginv1.Description, error) {
	return &pluginv1.Description{Name: "bare", Version: "1.0.0", Services: []pluginv1.ServiceSpec{{
		Name: "bare_pid", Description: "Return the process ID", Parameters: json.RawMessage(`{"type":"object"}`),
	}}}, nil
}

func (bare) Configure(context.Context, json.RawMessage) error { return nil }

func (bare) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(strconv.Itoa(os.Getpid())), nil
}

func (bare) Health(context.Context) error { return nil }

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginv1.Handshake,
		Plugins:         plugin.PluginSet{pluginv1.PluginName: &pluginv1.GRPCPlugin{Impl: bare{}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
