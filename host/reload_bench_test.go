package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testbin"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkHostPluginReload runs the host in this process (so that -trace
// and -cpuprofile see its work) and renames two builds of a test plugin
// into its folder in turn, as cmd/agenthost's BenchmarkPluginReload does;
// it reports the time from the rename to the new register at the
// simulator, and the part of it after the new process was handed over
// (the supervisor's "plugin started" or "reloaded" line; what a bare start does not
// do: the registry, the register's sending and its arrival). With -v it
// prints each reload's debug log, timed from the
// rename: what the reload waits on.
//
//	go test -run='^$' -bench=HostPluginReload -benchtime=10x -trace=/tmp/trace.out ./host/
//	go tool trace /tmp/trace.out
func BenchmarkHostPluginReload(b *testing.B) {
	v := [2]string{versionedPlugin(b, "1"), versionedPlugin(b, "2")}
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	dir := filepath.Join(b.TempDir(), "plugins")
	os.Mkdir(dir, 0o755)
	copyFile(b, v[0], filepath.Join(dir, "versioned"))
	cfg := config.Default()
	cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir, cfg.Plugins.Dirs = b.TempDir(), b.TempDir(), []string{dir}
	cfg.Audio.Backend = "none"
	var log timedLog
	h, err := New(cfg, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})), Options{Watch: true})
	if err != nil {
		b.Fatal(err)
	}
	runHost(b, h, sim, func(context.Context) bool { return true })
	dst, tmp := filepath.Join(dir, "versioned"), filepath.Join(dir, ".versioned.tmp")
	var lat, tail []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		copyFile(b, v[(i+1)%2], tmp)
		time.Sleep(50 * time.Millisecond) // the copy's events are ignored; let them pass
		regs := len(sim.Registers())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		log.mark()
		b.StartTimer()
		start := time.Now()
		if err := os.Rename(tmp, dst); err != nil {
			b.Fatal(err)
		}
		err := sim.WaitFor(ctx, func() bool { return len(sim.Registers()) > regs })
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if at, ok := log.startedAt(); ok {
			tail = append(tail, lat[len(lat)-1]-at)
		}
		cancel()
		if err != nil {
			b.Fatalf("reload %d: no register: %v\n%s", i, err, log.since())
		}
		time.Sleep(200 * time.Millisecond) // the old instance stops
		if testing.Verbose() {
			b.Logf("reload %d: %v\n%s", i, lat[len(lat)-1].Round(time.Microsecond), log.since())
		}
		i++
		b.StartTimer()
	}
	b.StopTimer()
	// A plugin's start from this process, as cmd/agenthost's
	// BenchmarkPluginStart measures it, beside the reloads.
	var starts []time.Duration
	for range 10 {
		starts = append(starts, bareStart(b, v[0]))
	}
	slices.Sort(lat)
	slices.Sort(starts)
	slices.Sort(tail)
	if len(tail) > 0 {
		b.ReportMetric(float64(tail[len(tail)/2])/1e6, "handover-to-register-median-ms")
	}
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "reload-median-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/1e6, "reload-max-ms")
	b.ReportMetric(float64(starts[len(starts)/2])/1e6, "start-median-ms")
	b.ReportMetric(float64(lat[len(lat)/2])/float64(starts[len(starts)/2]), "reload/start-x")
	b.ReportMetric(0, "ns/op")
}

// bareStart starts bin with go-plugin as the host does (handshake, gRPC,
// Configure, Describe) and returns how long that took.
func bareStart(b *testing.B, bin string) time.Duration {
	start := time.Now()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLUGIN_UNIX_SOCKET_DIR="+b.TempDir())
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: pluginv1.Handshake, Plugins: pluginv1.PluginSet(), Cmd: cmd, SkipHostEnv: true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC}, Logger: hclog.NewNullLogger(),
	})
	defer c.Kill()
	rpc, err := pluginv1.Dispense(c)
	if err != nil {
		b.Fatal(err)
	}
	if err := rpc.Configure(context.Background(), json.RawMessage(`{}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := rpc.Describe(context.Background()); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// versionedPlugin builds cmd/agenthost's versioned test plugin at version.
func versionedPlugin(b *testing.B, version string) string {
	out := filepath.Join(filepath.Dir(testbin.Build(b, "./plugins/clock")), "versioned-v"+version)
	cmd := exec.Command("go", "build", "-o", out, "-ldflags", "-X main.version="+version, "./cmd/agenthost/testdata/plugins/versioned")
	cmd.Dir = testbin.ModuleRoot(b)
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, o)
	}
	return out
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, in, 0o755); err != nil {
		b.Fatal(err)
	}
}

// timedLog keeps log lines with the time since mark.
type timedLog struct {
	mu      sync.Mutex
	t0      time.Time
	started time.Duration // since t0: the supervisor's "plugin started" line, 0 if none
	lines   bytes.Buffer
}

func (l *timedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.t0.IsZero() {
		if l.started == 0 && bytes.Contains(p, []byte("level=INFO")) && (bytes.Contains(p, []byte(`msg="plugin started"`)) || bytes.Contains(p, []byte(`msg="plugin reloaded"`))) {
			l.started = time.Since(l.t0)
		}
		fmt.Fprintf(&l.lines, "%8.2fms %s", float64(time.Since(l.t0))/1e6, p)
	}
	return len(p), nil
}

func (l *timedLog) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t0, l.started = time.Now(), 0
	l.lines.Reset()
}

// startedAt returns when, since mark, the supervisor logged "plugin started".
func (l *timedLog) startedAt() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started, l.started != 0
}

func (l *timedLog) since() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out strings.Builder
	io.Copy(&out, &l.lines)
	return out.String()
}
