// Command prior is a test plugin built on the plugin contract as it was
// before HostAudio (testdata/priorv1, a copy of that generated code): a
// newer host must still load it and call it.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"

	"github.com/hashicorp/go-plugin"

	pluginv1 "github.com/agenthost/agenthost/host/pluginmgr/testdata/priorv1"
)

type prior struct{}

func (prior) Describe(context.Context) (*pluginv1.Description, error) {
	return &pluginv1.Description{Name: "prior", Version: "0.9.0", Services: []pluginv1.ServiceSpec{{
		Name: "prior_pid", Description: "Return the process ID", Parameters: json.RawMessage(`{"type":"object"}`),
	}}}, nil
}

func (prior) Configure(context.Context, json.RawMessage) error { return nil }

func (prior) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(strconv.Itoa(os.Getpid())), nil
}

func (prior) Health(context.Context) error { return nil }

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginv1.Handshake,
		Plugins:         plugin.PluginSet{pluginv1.PluginName: &pluginv1.GRPCPlugin{Impl: prior{}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
