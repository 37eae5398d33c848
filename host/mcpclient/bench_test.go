package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/testbin"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
	"github.com/agenthost/agenthost/proto/voice"
)

// pluginProvider lends a go-plugin plugin's services to a registry, the
// way the plugin manager does (started with the host's handshake, gRPC,
// Pdeathsig and a private socket folder).
type pluginProvider struct {
	rpc  pluginv1.Client
	svcs []services.Service
}

func (p pluginProvider) ID() string                   { return "plugin:bare" }
func (p pluginProvider) Services() []services.Service { return p.svcs }
func (p pluginProvider) Call(ctx context.Context, m string, params json.RawMessage) (json.RawMessage, error) {
	return p.rpc.Call(ctx, m, params)
}

func startPlugin(b *testing.B, bin string) pluginProvider {
	b.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLUGIN_UNIX_SOCKET_DIR="+b.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: pluginv1.Handshake, Plugins: pluginv1.PluginSet(), Cmd: cmd, SkipHostEnv: true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC}, Logger: hclog.NewNullLogger(),
	})
	b.Cleanup(c.Kill)
	rpc, err := pluginv1.Dispense(c)
	if err != nil {
		b.Fatal(err)
	}
	if err := rpc.Configure(context.Background(), json.RawMessage(`{}`)); err != nil {
		b.Fatal(err)
	}
	desc, err := rpc.Describe(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	p := pluginProvider{rpc: rpc}
	for _, s := range desc.Services {
		p.svcs = append(p.svcs, services.Service{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return p
}

// BenchmarkTrivialToolThreeWays quotes, in one run, the round trip of one
// trivial tool through the same services.Dispatcher (lookup, validation,
// deadline, result check) served three ways: a built-in (get_current_time),
// a go-plugin plugin over gRPC (bare_pid), and an MCP stdio server written
// with the go-sdk (mcptoy's ping). It reports p50 and p99 in µs.
//
//	go test -run '^$' -bench TrivialToolThreeWays -benchtime 2000x ./host/mcpclient/
func BenchmarkTrivialToolThreeWays(b *testing.B) {
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(builtin.New(time.Now)); err != nil {
		b.Fatal(err)
	}
	if err := r.Put(startPlugin(b, testbin.Build(b, "./cmd/agenthost/testdata/plugins/bare"))); err != nil {
		b.Fatal(err)
	}
	starter, err := mcpclient.NewStarter(mcpclient.Options{Name: "toy", Server: mcpclient.ServerConfig{Command: testbin.Build(b, "./host/mcpclient/testdata/mcptoy")}})
	if err != nil {
		b.Fatal(err)
	}
	child, err := starter(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(child.Kill)
	if err := r.Put(childProvider{"mcp:toy", child}); err != nil {
		b.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{})
	for _, way := range []struct{ name, method, params string }{
		{"builtin", "get_current_time", `{"format":"simple"}`},
		{"go-plugin", "bare_pid", `{}`},
		{"mcp-stdio", "ping", `{}`},
	} {
		b.Run(way.name, func(b *testing.B) {
			c := voice.Call{Method: way.method, Params: json.RawMessage(way.params)}
			ctx := context.Background()
			for range 20 { // warm up connections and caches
				if out := d.Dispatch(ctx, c); !out.Success {
					b.Fatal(out.Error)
				}
			}
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				out := d.Dispatch(ctx, c)
				ds = append(ds, time.Since(start))
				if !out.Success {
					b.Fatal(out.Error)
				}
			}
			b.StopTimer()
			slices.Sort(ds)
			q := func(p float64) float64 {
				return float64(ds[int(p*float64(len(ds)-1)+0.5)]) / float64(time.Microsecond)
			}
			b.ReportMetric(q(0.50), "p50_µs")
			b.ReportMetric(q(0.99), "p99_µs")
			if b.N >= 100 {
				fmt.Printf("%-9s %-16s p50 %7.1f µs   p99 %7.1f µs   (%d calls)\n", way.name, way.method, q(0.50), q(0.99), b.N)
			}
		})
	}
}
