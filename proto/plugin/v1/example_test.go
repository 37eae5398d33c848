package pluginv1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// The host's side: start a plugin binary, dispense the contract's client,
// describe, configure and call it, and tell the kinds of failure apart.
func Example_host() {
	const bin = "/usr/lib/agenthost/plugins/clock"
	runtimeDir := "/run/agenthost/plugins" // private (0700), e.g. systemd RuntimeDirectory

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		// go-plugin v1.8.0 ignores ClientConfig.UnixSocketConfig.TempDir
		// unless a RunnerFunc is set; the plugin reads this variable itself.
		"PLUGIN_UNIX_SOCKET_DIR="+runtimeDir,
		pluginv1.EnvDataDir+"=/var/lib/agenthost/plugins/clock",
	)
	// Kill the plugin if the host dies. It fires when the forking OS thread
	// exits, so start the client from a goroutine locked to its thread for
	// the plugin's lifetime. (The SDK also exits on its own when its parent
	// process goes away.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginv1.Handshake,
		Plugins:          pluginv1.PluginSet(),
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env is complete; otherwise os.Environ() is appended and wins
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true, // plugin.CleanupClients() on shutdown
		StartTimeout:     10 * time.Second,
		// The plugin's stderr lines arrive here with their level.
		Logger: hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Debug}),
		// What the plugin writes to os.Stdout/os.Stderr after the handshake
		// arrives here (go-plugin's stdio stream); default: discarded.
		SyncStdout: os.Stderr,
		SyncStderr: os.Stderr,
	})
	defer client.Kill()

	c, err := pluginv1.Dispense(client) // starts the process, handshake, dispense "services"
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	desc, err := c.Describe(ctx)
	if err != nil {
		fmt.Println("describe:", err)
		return
	}
	fmt.Println(desc.Name, desc.Version, len(desc.Services), "services")
	// plugins.config.<desc.Name> as JSON; "{}" when the YAML has none.
	if err := c.Configure(ctx, json.RawMessage(`{"timezone":"Europe/Berlin"}`)); err != nil {
		fmt.Println(err) // *pluginv1.ConfigError: "config rejected: ..."
		return
	}

	callCtx, cancelCall := context.WithTimeout(ctx, 2*time.Second) // per-service deadline
	defer cancelCall()
	data, err := c.Call(callCtx, "get_current_time", json.RawMessage(`{"format":"simple"}`))
	if ce, ok := pluginv1.AsCallError(err); ok {
		fmt.Println("result: success=false, error:", ce.Message, "kind:", ce.Kind)
		return
	}
	switch {
	case status.Code(err) == codes.DeadlineExceeded:
		fmt.Println("result: success=false, error: the service timed out")
	case err != nil && client.Exited():
		fmt.Println("result: success=false, error: the plugin crashed") // make a new Client
	case err != nil:
		fmt.Println("result: success=false, error:", err)
	default:
		fmt.Printf("result: success=true, data=%s\n", data)
	}
}
