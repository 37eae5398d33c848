package main

// Benchmarks of the plugin manager with real binaries. They report figures
// (b.ReportMetric) and assert nothing about time. scripts/bench-plugins.sh
// runs them all and prints the figures.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/internal/testbin"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// benchHost starts a host on a fresh simulator with a plugin folder filled
// by install (nil: an empty folder) and waits for its first register.
func benchHost(b *testing.B, install func(dir string), sets ...string) (*hostProc, *voicetest.Server, string) {
	b.Helper()
	sim, err := voicetest.NewServer(voicetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sim.Close() })
	dir := filepath.Join(b.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if install != nil {
		install(dir)
	}
	d := startHost(b, sim, append([]string{"plugins.dirs=" + dir, "log.level=info"}, sets...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sim.WaitFor(ctx, func() bool { return len(sim.Registers()) >= 1 }); err != nil {
		b.Fatalf("no register: %v\n%s", err, d.log)
	}
	return d, sim, dir
}

// bareClient starts a plugin binary with go-plugin the way the host does
// (same handshake, gRPC, Pdeathsig, private socket folder) and configures it.
func bareClient(b *testing.B, bin string, mtls bool) (*goplugin.Client, pluginv1.Client) {
	b.Helper()
	sock := b.TempDir()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLUGIN_UNIX_SOCKET_DIR="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: pluginv1.Handshake, Plugins: pluginv1.PluginSet(), Cmd: cmd, SkipHostEnv: true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC}, AutoMTLS: mtls, Logger: hclog.NewNullLogger(),
		GRPCDialOptions: pluginv1.DialOptions(),
	})
	rpc, err := pluginv1.Dispense(c)
	if err != nil {
		c.Kill()
		b.Fatal(err)
	}
	if err := rpc.Configure(context.Background(), json.RawMessage(`{}`)); err != nil {
		c.Kill()
		b.Fatal(err)
	}
	return c, rpc
}

// pct returns the p-quantile (0..1) of ds, which it sorts.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(p*float64(len(ds)-1)+0.5)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// logDurations returns the value of key (a Go duration) on every host log
// line that contains all of parts.
func logDurations(b *testing.B, log string, key string, parts ...string) []time.Duration {
	b.Helper()
	re := regexp.MustCompile(`\b` + key + `=(\S+)`)
	var out []time.Duration
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if m := re.FindStringSubmatch(line); all && m != nil {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				b.Fatalf("%s in %q: %v", key, line, err)
			}
			out = append(out, d)
		}
	}
	return out
}

// hostTimes asks a testkit host for its own time of each call of method
// since the last ask (the host logs it only at debug).
func hostTimes(b *testing.B, sim *voicetest.Server, method string) []time.Duration {
	b.Helper()
	out, err := sim.Call(context.Background(), "testkit_calls", map[string]string{"method": method})
	var ns []int64
	if err != nil || !out.Success || json.Unmarshal(out.Data, &ns) != nil {
		b.Fatalf("testkit_calls: %+v %v", out, err)
	}
	d := make([]time.Duration, len(ns))
	for i, n := range ns {
		d[i] = time.Duration(n)
	}
	return d
}

// BenchmarkPluginCall compares, side by side in one run, get_current_time
//   - plugin:  simulator → host → clock plugin → host → simulator (TCP included),
//   - builtin: the same through a host with no plugins (the built-in service),
//   - bare:    a go-plugin gRPC call from this process to the same clock binary
//     (with a deadline, as every call has one),
//
// plus the host-only time of the plugin call (the host's `took=`: dispatch,
// plugin RPC and writing the result), and the ratio of that to the bare RPC
// (target: the host adds under 30%, ratio < 1.3). (plugin-builtin)/bare is
// the plugin call's extra end-to-end cost over the built-in against the bare
// RPC; it also counts the scheduling of one more process.
//
//	go test -run='^$' -bench='^BenchmarkPluginCall$' -benchtime=10000x ./cmd/agenthost/
func BenchmarkPluginCall(b *testing.B) {
	clock := bundled(b, "clock")
	big := "services.max_result=1MiB" // testkit_calls hands back every call's time
	_, simP, _ := benchHost(b, func(dir string) { copyExec(b, clock, filepath.Join(dir, "clock")) }, "services.builtins=false", big)
	_, simB, _ := benchHost(b, nil, big)
	cl, bare := bareClient(b, clock, false)
	defer cl.Kill()

	ctx := context.Background()
	params := json.RawMessage(`{"format":"simple"}`)
	viaSim := func(sim *voicetest.Server) time.Duration {
		start := time.Now()
		out, err := sim.Call(ctx, "get_current_time", params)
		d := time.Since(start)
		if err != nil || !out.Success {
			b.Fatalf("%+v %v", out, err)
		}
		return d
	}
	direct := func() time.Duration {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a call has a deadline, in the host as here
		_, err := bare.Call(cctx, "get_current_time", params)
		d := time.Since(start)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	for range 300 { // warm up
		viaSim(simP)
		viaSim(simB)
		direct()
	}
	hostTimes(b, simP, "get_current_time") // forget the warm-up
	hostTimes(b, simB, "get_current_time")

	var plugin, builtin, rpc []time.Duration
	for b.Loop() {
		plugin = append(plugin, viaSim(simP))
		builtin = append(builtin, viaSim(simB))
		rpc = append(rpc, direct())
	}
	b.StopTimer()
	took := hostTimes(b, simP, "get_current_time")
	tookB := hostTimes(b, simB, "get_current_time")
	b.ReportMetric(us(pct(plugin, .5)), "plugin-p50-µs")
	b.ReportMetric(us(pct(plugin, .99)), "plugin-p99-µs")
	b.ReportMetric(us(pct(builtin, .5)), "builtin-p50-µs")
	b.ReportMetric(us(pct(builtin, .99)), "builtin-p99-µs")
	b.ReportMetric(us(pct(rpc, .5)), "bare-p50-µs")
	b.ReportMetric(us(pct(rpc, .99)), "bare-p99-µs")
	b.ReportMetric(us(pct(took, .5)), "host-took-plugin-p50-µs")
	b.ReportMetric(us(pct(took, .99)), "host-took-plugin-p99-µs")
	b.ReportMetric(us(pct(tookB, .5)), "host-took-builtin-p50-µs")
	b.ReportMetric(float64(pct(took, .5))/float64(pct(rpc, .5)), "host/bare-p50-x")
	b.ReportMetric(float64(pct(took, .9))/float64(pct(rpc, .9)), "host/bare-p90-x")
	b.ReportMetric(float64(pct(took, .99))/float64(pct(rpc, .99)), "host/bare-p99-x")
	b.ReportMetric(float64(pct(took, .999))/float64(pct(rpc, .999)), "host/bare-p999-x")
	// What the plugin costs end to end over the built-in, against the bare RPC.
	b.ReportMetric(float64(pct(plugin, .5)-pct(builtin, .5))/float64(pct(rpc, .5)), "(plugin-builtin)/bare-p50-x")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPluginReload measures hot reload: from the rename of a new
// binary into the plugin folder to the new register arriving at the
// simulator (a binary renamed in, written and synced as dpkg does, is
// whole and needs no settling wait;
// target median under 100 ms), over at
// least 10 reloads alternating two versions, with AutoMTLS off and on. It
// also reports the host's own start time of each new instance (`took=` on
// "plugin reloaded": start, handshake, Describe, Configure).
//
//	go test -run='^$' -bench='^BenchmarkPluginReload$' -benchtime=1x ./cmd/agenthost/
func BenchmarkPluginReload(b *testing.B) {
	for _, mtls := range []bool{false, true} {
		b.Run(fmt.Sprintf("automtls=%v", mtls), func(b *testing.B) {
			v := [2]string{testPlugin(b, "versioned", "1"), testPlugin(b, "versioned", "2")}
			d, sim, dir := benchHost(b, func(dir string) {
				copyExec(b, bundled(b, "clock"), filepath.Join(dir, "clock"))
				copyExec(b, v[0], filepath.Join(dir, "versioned"))
			}, fmt.Sprintf("plugins.automtls=%v", mtls))
			dst, tmp := filepath.Join(dir, "versioned"), filepath.Join(dir, ".versioned.tmp")
			var lat []time.Duration
			for i := range max(b.N, 10) {
				want := 1 + (i+1)%2
				copyExec(b, v[want-1], tmp)
				// As dpkg does before its rename: unsynced, ext4 writes the
				// 20 MB copy back inside the rename over the old binary
				// (auto_da_alloc), up to 1.4 ms of the installer's own time
				// counted as the reload's.
				syncFile(b, tmp)
				time.Sleep(50 * time.Millisecond) // the copy's events are ignored; let them pass
				regs := len(sim.Registers())
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				start := time.Now()
				if err := os.Rename(tmp, dst); err != nil {
					b.Fatal(err)
				}
				err := sim.WaitFor(ctx, func() bool { return len(sim.Registers()) > regs })
				lat = append(lat, time.Since(start))
				cancel()
				if err != nil {
					b.Fatalf("reload %d: no register: %v\n%s", i, err, d.log)
				}
				if got := versionOf(sim.Registers()[regs]); got != fmt.Sprint(want) {
					b.Fatalf("reload %d: version %q, want %d", i, got, want)
				}
				time.Sleep(200 * time.Millisecond) // the old instance stops
			}
			// "plugin reloaded" (eager), or "plugin started" when a lazy
			// plugin was idle: each new binary is started to be described.
			took := logDurations(b, d.log.String(), "took", "level=INFO", "plugin=versioned", " services=versioned_info")
			b.ReportMetric(ms(pct(lat, .5)), "reload-median-ms")
			b.ReportMetric(ms(pct(lat, .9)), "reload-p90-ms")
			b.ReportMetric(ms(pct(lat, 1)), "reload-max-ms")
			b.ReportMetric(ms(pct(took, .5)), "host-start-median-ms")
			b.ReportMetric(float64(len(lat)), "reloads")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// syncFile flushes the file at path to disk.
func syncFile(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPluginStart measures starting the clock plugin from this process
// as the host does (go-plugin NewClient → Dispense → Describe), with
// AutoMTLS off and on, interleaved, median of at least 10 starts each.
//
//	go test -run='^$' -bench='^BenchmarkPluginStart$' -benchtime=1x ./cmd/agenthost/
func BenchmarkPluginStart(b *testing.B) {
	clock := bundled(b, "clock")
	var off, on []time.Duration
	for range max(b.N, 12) {
		for _, mtls := range []bool{false, true} {
			start := time.Now()
			c, rpc := bareClient(b, clock, mtls)
			if _, err := rpc.Describe(context.Background()); err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			c.Kill()
			if mtls {
				on = append(on, d)
			} else {
				off = append(off, d)
			}
		}
	}
	b.ReportMetric(ms(pct(off, .5)), "start-median-ms")
	b.ReportMetric(ms(pct(on, .5)), "start-automtls-median-ms")
	b.ReportMetric(ms(pct(off, 1)), "start-max-ms")
	b.ReportMetric(ms(pct(on, 1)), "start-automtls-max-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPluginRSS reports the resident memory (VmRSS, and the anonymous
// part of it, which is what the system cannot reclaim) of release builds:
// the host alone, the host with the three bundled plugins, and each bundled
// plugin once idle. "Idle" is after the idle trim (internal/memtrim: 5 s
// without a call), when the process has handed back what start-up and its
// last calls needed; lazy plugins are made eager here so that there is a
// process to measure.
//
//	go test -run='^$' -bench='^BenchmarkPluginRSS$' -benchtime=1x ./cmd/agenthost/
func BenchmarkPluginRSS(b *testing.B) {
	names := []string{"clock", "files", "sysinfo"}
	host := testbin.BuildRelease(b, "./cmd/agenthost", "testkit")
	start := func(install func(dir string), sets ...string) (*hostProc, *voicetest.Server) {
		sim, err := voicetest.NewServer(voicetest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sim.Close() })
		dir := filepath.Join(b.TempDir(), "plugins")
		os.Mkdir(dir, 0o755)
		if install != nil {
			install(dir)
		}
		d := startHostBin(b, host, sim, nil, append([]string{"plugins.dirs=" + dir, "log.level=info", "plugins.lazy=false"}, sets...)...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sim.WaitFor(ctx, func() bool { return len(sim.Registers()) >= 1 }); err != nil {
			b.Fatalf("no register: %v\n%s", err, d.log)
		}
		return d, sim
	}
	alone, _ := start(nil)
	files := filepath.Join(b.TempDir(), "files")
	d, sim := start(func(dir string) {
		for _, name := range names {
			copyExec(b, testbin.BuildRelease(b, "./plugins/"+name), filepath.Join(dir, name))
		}
	}, "plugins.config.files.root="+files, "plugins.sandbox.files.write="+files, "services.builtins=false")
	ctx := context.Background()
	for _, c := range [][2]string{{"get_current_time", `{}`}, {"get_system_info", `{}`}, {"list_files", `{}`}} {
		if out, err := sim.Call(ctx, c[0], json.RawMessage(c[1])); err != nil || !out.Success {
			b.Fatalf("%s: %+v %v", c[0], out, err)
		}
	}
	time.Sleep(6 * time.Second) // idle: past the 5 s idle trim
	list := d.pluginList()
	report := func(pid int, name string) {
		rss, anon := memOf(b, pid)
		b.ReportMetric(rss, name+"-RSS-MB")
		b.ReportMetric(anon, name+"-anon-MB")
	}
	report(alone.cmd.Process.Pid, "host-alone")
	report(d.cmd.Process.Pid, "host-3-plugins")
	for _, name := range names {
		st := list[name]
		if st.PID == 0 {
			b.Fatalf("%s: %+v", name, st)
		}
		report(st.PID, name)
	}
	b.ReportMetric(0, "ns/op")
}

// memOf returns a process's VmRSS and RssAnon in MB.
func memOf(b *testing.B, pid int) (rss, anon float64) {
	m, err := procs.Memory(pid)
	if err != nil {
		b.Fatal(err)
	}
	return float64(m.RSS) / (1 << 20), float64(m.Anon) / (1 << 20)
}

// BenchmarkLazyPlugins: ten lazy plugins (the clock, under ten names and
// prefixes) in the folder. It reports the host's start (process start to
// the first register) and RSS with an empty description cache and with a
// warm one, the plugin processes running once it is ready (goal: none), and
// the first call to an idle lazy plugin, which starts it (goal: p50 and p99
// under 30 ms), over several rounds of idle stops.
//
//	go test -run='^$' -bench='^BenchmarkLazyPlugins$' -benchtime=1x ./cmd/agenthost/
func BenchmarkLazyPlugins(b *testing.B) {
	const n = 10
	host := testbin.BuildRelease(b, "./cmd/agenthost", "testkit")
	clock := testbin.BuildRelease(b, "./plugins/clock")
	dir := filepath.Join(b.TempDir(), "plugins")
	os.Mkdir(dir, 0o755)
	state := b.TempDir()
	sets := []string{"plugins.dirs=" + dir, "plugins.state_dir=" + state, "plugins.lazy=true", "plugins.idle_stop=300ms",
		"log.level=info", "services.builtins=false"}
	for i := range n {
		copyExec(b, clock, filepath.Join(dir, fmt.Sprintf("clock%d", i)))
		sets = append(sets, fmt.Sprintf("services.prefixes.clock%d=c%d_", i, i))
	}
	start := func() (*hostProc, *voicetest.Server, time.Duration) {
		sim, err := voicetest.NewServer(voicetest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sim.Close() })
		t0 := time.Now()
		d := startHostBin(b, host, sim, nil, sets...)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := sim.WaitFor(ctx, func() bool { return len(sim.Registers()) >= 1 }); err != nil {
			b.Fatalf("no register: %v\n%s", err, d.log)
		}
		ready := time.Since(t0)
		for i := range n {
			if _, ok := sim.Services()[fmt.Sprintf("c%d_get_current_time", i)]; !ok {
				b.Fatalf("clock%d is not registered: %v", i, sim.Services())
			}
		}
		return d, sim, ready
	}
	cold, _, coldReady := start()
	coldProcs := len(procs.In(dir))
	coldRSS, _ := memOf(b, cold.cmd.Process.Pid)
	if err := cold.stop(); err != nil {
		b.Fatal(err)
	}
	d, sim, warmReady := start()
	warmProcs := len(procs.In(dir))
	warmRSS, warmAnon := memOf(b, d.cmd.Process.Pid)

	var lat []time.Duration
	ctx := context.Background()
	for round := range max(b.N, 4) {
		for i := range n {
			name := fmt.Sprintf("clock%d", i)
			deadline := time.Now().Add(15 * time.Second)
			for d.pluginList()[name].State != "idle" { // stopped after idle_stop
				if time.Now().After(deadline) {
					b.Fatalf("round %d: %s never went idle: %+v", round, name, d.pluginList()[name])
				}
				time.Sleep(20 * time.Millisecond)
			}
			t0 := time.Now()
			out, err := sim.Call(ctx, fmt.Sprintf("c%d_get_current_time", i), json.RawMessage(`{}`))
			lat = append(lat, time.Since(t0))
			if err != nil || !out.Success {
				b.Fatalf("%s: %+v %v", name, out, err)
			}
		}
	}
	b.ReportMetric(ms(coldReady), "ready-empty-cache-ms")
	b.ReportMetric(ms(warmReady), "ready-warm-cache-ms")
	b.ReportMetric(float64(coldProcs), "processes-after-ready-empty-cache")
	b.ReportMetric(float64(warmProcs), "processes-after-ready-warm-cache")
	b.ReportMetric(coldRSS, "host-RSS-empty-cache-MB")
	b.ReportMetric(warmRSS, "host-RSS-warm-cache-MB")
	b.ReportMetric(warmAnon, "host-anon-warm-cache-MB")
	b.ReportMetric(ms(pct(lat, .5)), "cold-call-p50-ms")
	b.ReportMetric(ms(pct(lat, .99)), "cold-call-p99-ms")
	b.ReportMetric(float64(len(lat)), "cold-calls")
	b.ReportMetric(0, "ns/op")
}
