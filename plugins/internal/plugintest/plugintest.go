// Package plugintest builds agenthost plugin binaries and runs them through a
// real go-plugin client, for the end-to-end tests of the SDK and the bundled
// plugins. It is the host's start-up sequence in miniature.
package plugintest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// Build compiles the main package pkg (an import path, or a path relative to
// the test's package folder starting with "./") once per test binary and
// returns the executable's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	if strings.HasPrefix(pkg, "./") {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			t.Fatal(err)
		}
		pkg = abs
	}
	return testbin.Build(t, pkg)
}

// Cleanup removes the binaries Build made; call it from TestMain after m.Run.
func Cleanup() { testbin.Cleanup() }

// Options tune Start.
type Options struct {
	// AutoMTLS turns on go-plugin's automatic mutual TLS.
	AutoMTLS bool
	// Env is added to the plugin's environment (e.g. the data dir).
	Env []string
	// Args are the plugin's command-line arguments (the host passes none;
	// test plugins use them to pick a behaviour).
	Args []string
}

// Plugin is a running plugin.
type Plugin struct {
	pluginv1.Client
	GoPlugin *plugin.Client
	logs     *testbin.Buffer
}

// Logs returns what the host-side go-plugin logger wrote so far: the plugin's
// stderr lines, re-logged with their level ("[ERROR] clock: ...").
func (p *Plugin) Logs() string { return p.logs.String() }

// Start starts bin the way the host does and dispenses the contract client.
// The plugin is killed when the test ends.
func Start(t testing.TB, bin string, opts Options) *Plugin {
	t.Helper()
	p, err := StartErr(t, bin, opts)
	if err != nil {
		t.Fatalf("start %s: %v", filepath.Base(bin), err)
	}
	return p
}

// StartErr is Start that returns the start-up error instead of failing.
func StartErr(t testing.TB, bin string, opts Options) (*Plugin, error) {
	t.Helper()
	logs := &testbin.Buffer{}
	cmd := exec.Command(bin, opts.Args...)
	// go-plugin v1.8.0 ignores ClientConfig.UnixSocketConfig.TempDir unless
	// a RunnerFunc is set; the plugin reads the socket folder from its env.
	cmd.Env = append(os.Environ(), "PLUGIN_UNIX_SOCKET_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, opts.Env...)
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginv1.Handshake,
		Plugins:          pluginv1.PluginSet(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         opts.AutoMTLS,
		// What the plugin writes to os.Stdout/os.Stderr after the handshake
		// travels over go-plugin's stdio stream, not the stderr pipe.
		SyncStdout: &prefixWriter{prefix: "[stdout] ", w: logs},
		SyncStderr: &prefixWriter{prefix: "[stderr] ", w: logs},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "host",
			Level:  hclog.Trace,
			Output: logs,
		}),
	})
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("host log of %s:\n%s", filepath.Base(bin), logs.String())
		}
	})
	cl, err := pluginv1.Dispense(c)
	if err != nil {
		return nil, err
	}
	return &Plugin{Client: cl, GoPlugin: c, logs: logs}, nil
}

// RunByHand runs bin without the host's handshake, as a user at a terminal
// would, and returns its stdout, stderr and exit code.
func RunByHand(t testing.TB, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run %s: %v", bin, err)
	}
	return out.String(), errb.String(), code
}

// Configured starts bin and configures it with config (JSON), failing the
// test on any error.
func Configured(t testing.TB, bin, config string, opts Options) *Plugin {
	t.Helper()
	p := Start(t, bin, opts)
	if err := p.Configure(context.Background(), []byte(config)); err != nil {
		t.Fatalf("configure %s with %s: %v", filepath.Base(bin), config, err)
	}
	return p
}

type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
