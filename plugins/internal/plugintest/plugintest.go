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
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
	buildDir   string
)

// Build compiles the main package pkg (an import path, or a path relative to
// the test's package folder starting with "./") once per test binary and
// returns the executable's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildCache[pkg]; ok {
		return bin
	}
	if buildDir == "" {
		// Not t.TempDir: the binary outlives the first test that builds it.
		d, err := os.MkdirTemp("", "plugintest-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	bin := filepath.Join(buildDir, path.Base(filepath.ToSlash(pkg)))
	if _, err := os.Stat(bin); err == nil {
		bin += "-" + time.Now().Format("150405.000000000")
	}
	cmd := exec.Command(goTool(), "build", "-o", bin, pkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	buildCache[pkg] = bin
	return bin
}

// Cleanup removes the binaries Build made; call it from TestMain after m.Run.
func Cleanup() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

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
	logs     *syncBuffer
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
	logs := &syncBuffer{}
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

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
