package main

// End-to-end tests of the plugin manager: the real host binary, real plugin
// binaries (the bundled ones and test plugins under testdata/plugins, built
// by the tests) and the in-process simulator.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"

	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

var (
	pluginBinsMu sync.Mutex
	pluginBins   = map[string]string{}
)

// testPlugin builds testdata/plugins/<name> once per test process, with
// main.version set when version is not empty. The binary goes into
// testbin's folder, which TestMain removes.
func testPlugin(t testing.TB, name, version string) string {
	t.Helper()
	key := name + "@" + version
	pluginBinsMu.Lock()
	defer pluginBinsMu.Unlock()
	if p, ok := pluginBins[key]; ok {
		return p
	}
	// Any testbin build creates (and registers for cleanup) its folder.
	dir := filepath.Dir(testbin.Build(t, "./plugins/clock"))
	out := filepath.Join(dir, "testplugin-"+name+"-v"+version)
	goBuild(t, out, name, version)
	pluginBins[key] = out
	return out
}

// goBuild runs `go build -o out` for testdata/plugins/<name>.
func goBuild(t testing.TB, out, name, version string) {
	t.Helper()
	args := []string{"build", "-o", out}
	if version != "" {
		args = append(args, "-ldflags", "-X main.version="+version)
	}
	cmd := exec.Command("go", append(args, "./cmd/agenthost/testdata/plugins/"+name)...)
	cmd.Dir = testbin.ModuleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
}

// bundled returns the binary of a bundled plugin (plugins/<name>).
func bundled(t testing.TB, name string) string {
	return testbin.Build(t, "./plugins/"+name)
}

// copyExec copies a binary to dst (mode 0755); for setting up a plugin
// folder before the host starts.
func copyExec(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// sh runs a command (cp, mv, rm …) and fails the test if it fails.
func sh(t testing.TB, name string, args ...string) {
	t.Helper()
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// startPluginHost creates a plugin folder, lets install fill it, and starts
// the host on it with the built-in services off, so that every service
// answered comes from a plugin.
func startPluginHost(t testing.TB, sim *voicetest.Server, install func(dir string), sets ...string) (*hostProc, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if install != nil {
		install(dir)
	}
	d := startHost(t, sim, append([]string{"plugins.dirs=" + dir, "services.builtins=false"}, sets...)...)
	return d, dir
}

// pluginList runs `agenthost plugins --json` against the running host.
func (d *hostProc) pluginList() map[string]pluginmgr.Status {
	d.t.Helper()
	out, err := d.cli("plugins", "--json")
	if err != nil {
		d.t.Fatalf("agenthost plugins --json: %v\n%s", err, out)
	}
	var list []pluginmgr.Status
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		d.t.Fatalf("agenthost plugins --json: %v\n%s", err, out)
	}
	m := map[string]pluginmgr.Status{}
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

// running calls service (which starts a lazy plugin) and waits until
// `agenthost plugins` shows the plugin running with a process.
func (d *hostProc) running(sim *voicetest.Server, name, service string) pluginmgr.Status {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		// A lazy plugin's call can be served by the process started only
		// to describe it, which then stops as unused: call again.
		if out, err := sim.Call(context.Background(), service, json.RawMessage(`{}`)); err != nil || !out.Success {
			d.t.Fatalf("%s: %+v %v", service, out, err)
		}
		for again := time.Now().Add(time.Second); time.Now().Before(again); time.Sleep(20 * time.Millisecond) {
			if st := d.pluginList()[name]; st.State == "running" && st.PID != 0 {
				return st
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s never ran: %+v", name, d.pluginList()[name])
		}
	}
}

// logCount counts the host's log lines that contain every one of parts.
func (d *hostProc) logCount(parts ...string) int {
	n := 0
	for _, line := range strings.Split(d.log.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// logLine waits until the host's log has a line containing every one of
// parts, and returns it.
func (d *hostProc) logLine(parts ...string) string {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if line, ok := d.log.Line(parts...); ok {
			return line
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the host log never showed a line with %q", parts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLogCount waits until at least n log lines contain every one of parts.
func (d *hostProc) waitLogCount(n int, parts ...string) {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for d.logCount(parts...) < n {
		if time.Now().After(deadline) {
			d.t.Fatalf("the host log never showed %d lines with %q", n, parts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pluginsReady waits for the first register (and the simulator's record of it).
func pluginsReady(t *testing.T, sim *voicetest.Server) {
	t.Helper()
	ready(t, sim, 1)
	waitFor(t, sim, "the first register", func() bool { return len(sim.Registers()) >= 1 })
}

// waitRegisters waits until the simulator has n registers and checks that
// it has no more than n.
func waitRegisters(t *testing.T, sim *voicetest.Server, n int, what string) voice.Register {
	t.Helper()
	waitFor(t, sim, what, func() bool { return len(sim.Registers()) >= n })
	regs := sim.Registers()
	if len(regs) != n {
		t.Fatalf("%s: %d registers, want %d", what, len(regs), n)
	}
	return regs[n-1]
}

var simpleTime = regexp.MustCompile(`^"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"$`)

// callLoop calls a service over and over until stopped and keeps every
// failure.
type callLoop struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	n    int
	bad  []string
}

// startCallLoop calls get_current_time (the clock plugin's) in a loop.
func startCallLoop(sim *voicetest.Server) *callLoop {
	l := &callLoop{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			out, err := sim.Call(ctx, "get_current_time", json.RawMessage(`{"format":"simple"}`))
			cancel()
			l.mu.Lock()
			l.n++
			if err != nil || !out.Success || !simpleTime.Match(out.Data) {
				l.bad = append(l.bad, fmt.Sprintf("call %d: %+v %v", l.n, out, err))
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *callLoop) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// await waits until the loop made n more calls than before: the loop ran
// across whatever happened in between.
func (l *callLoop) await(t *testing.T, before, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for l.count() < before+n {
		if time.Now().After(deadline) {
			t.Fatalf("the call loop is stuck at %d calls", l.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish stops the loop and fails the test for every failed call.
func (l *callLoop) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		t.Errorf("a call to the clock plugin failed: %s", b)
	}
	t.Logf("%d calls to the clock plugin, %d failed", l.n, len(l.bad))
}

// versionOf returns the version the versioned plugin's service description
// carries in a register, or "" when the service is absent.
func versionOf(r voice.Register) string {
	s, ok := r.Services["versioned_info"]
	if !ok {
		return ""
	}
	_, v, _ := strings.Cut(s.Description, ": v")
	return v
}

// TestPluginHotReload installs, replaces (in each way people do) and removes
// a plugin while the host runs and a loop calls another plugin: every change
// gives exactly one register on the same connection, a binary that did not
// change gives none, and no call to the other plugin fails.
func TestPluginHotReload(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	d, dir := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock")) })
	pluginsReady(t, sim)
	if _, ok := sim.Services()["get_current_time"]; !ok {
		t.Fatalf("the clock plugin's service is not registered: %v", sim.Services())
	}
	stage := t.TempDir() // another folder on the same file system
	dst := filepath.Join(dir, "versioned")
	regs := len(sim.Registers())
	loop := startCallLoop(sim)
	lastPID := 0

	// expect checks the state after one change: one more register, carrying
	// version want ("" for no versioned plugin), a new process serving it,
	// the old one gone, and the loop calling throughout.
	expect := func(step, want string, before int) {
		t.Helper()
		regs++
		r := waitRegisters(t, sim, regs, step)
		if got := versionOf(r); got != want {
			t.Fatalf("%s: the register has version %q, want %q", step, got, want)
		}
		if _, ok := r.Services["get_current_time"]; !ok {
			t.Fatalf("%s: get_current_time left the register", step)
		}
		if want != "" {
			d.running(sim, "versioned", "versioned_info") // a lazy plugin may have stopped after describing itself
			out := call(t, sim, "versioned_info", `{}`)
			var got struct {
				Version string
				PID     int
			}
			if !out.Success || json.Unmarshal(out.Data, &got) != nil || got.Version != want {
				t.Fatalf("%s: versioned_info answered %+v, want version %s", step, out, want)
			}
			st := d.pluginList()["versioned"]
			if st.State != "running" || st.Version != want || st.PID != got.PID {
				t.Fatalf("%s: agenthost plugins says %+v; the call came from pid %d", step, st, got.PID)
			}
			if got.PID == lastPID {
				t.Fatalf("%s: the same process %d still serves", step, got.PID)
			}
			if lastPID != 0 && !procs.Gone(lastPID, 15*time.Second) {
				t.Fatalf("%s: the old instance (pid %d) was not stopped", step, lastPID)
			}
			lastPID = got.PID
		} else if !procs.Gone(lastPID, 15*time.Second) {
			t.Fatalf("%s: the removed plugin's process %d still runs", step, lastPID)
		}
		loop.await(t, before, 3)
	}

	n := loop.count()
	sh(t, "cp", testPlugin(t, "versioned", "1"), dst)
	expect("cp of a new file", "1", n)

	n = loop.count()
	sh(t, "cp", testPlugin(t, "versioned", "2"), filepath.Join(dir, ".versioned.tmp"))
	sh(t, "mv", filepath.Join(dir, ".versioned.tmp"), dst)
	expect("cp to a temporary name, then mv", "2", n)

	n = loop.count()
	sh(t, "cp", testPlugin(t, "versioned", "3"), filepath.Join(stage, "versioned"))
	sh(t, "mv", filepath.Join(stage, "versioned"), dst)
	expect("mv from another folder", "3", n)

	n = loop.count()
	goBuild(t, dst, "versioned", "4")
	expect("go build -o into the folder", "4", n)

	// The same build again: go build finds the file up to date and only
	// touches it (a CHMOD event). The host sees it, finds the same binary,
	// and does nothing.
	n = loop.count()
	touched := d.logCount("plugin binary touched but unchanged", "plugin=versioned")
	goBuild(t, dst, "versioned", "4")
	d.waitLogCount(touched+1, "plugin binary touched but unchanged", "plugin=versioned")
	if st := d.pluginList()["versioned"]; st.PID != lastPID || st.Version != "4" {
		t.Fatalf("an unchanged build restarted the plugin: %+v, was pid %d", st, lastPID)
	}
	loop.await(t, n, 3)

	// cp over the running binary is refused by the kernel (ETXTBSY); that is
	// why installs write a temporary file and rename it. Nothing changes.
	out, err := exec.Command("cp", testPlugin(t, "versioned", "1"), dst).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Text file busy") {
		t.Fatalf("cp over a running plugin binary: %v %s; want ETXTBSY", err, out)
	}

	n = loop.count()
	sh(t, "rm", dst)
	d.logLine("plugin removed; its services are gone", "plugin=versioned")
	expect("rm", "", n)

	loop.finish(t)
	if got := len(sim.Registers()); got != regs {
		t.Fatalf("%d registers, want %d: one at connect and one per change", got, regs)
	}
	if sim.Connections() != 1 || len(sim.Auths()) != 1 || registersOn(sim, 1) != regs {
		t.Fatalf("the host reconnected: %d connections, %d auths", sim.Connections(), len(sim.Auths()))
	}
	if n := d.logCount("plugin=versioned", "services=versioned_info", "took="); n != 4 {
		t.Fatalf("the versioned plugin was started %d times for 4 new binaries", n)
	}
}

// TestPluginCrashMidCall: a plugin that exits in the middle of a call gives
// that call an error result, is restarted (a later call succeeds, without a
// new register), and once it crashed max_crashes times it is parked and its
// services leave the register. The clock plugin serves throughout.
func TestPluginCrashMidCall(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) {
		copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock"))
		copyExec(t, testPlugin(t, "faulty", ""), filepath.Join(dir, "faulty"))
	}, "plugins.restart.max_crashes=2", "plugins.restart.base=100ms", "plugins.restart.window=1m")
	pluginsReady(t, sim)
	loop := startCallLoop(sim)
	regs := len(sim.Registers())

	pidOf := func(out voice.Outcome) int {
		var v struct{ PID int }
		if !out.Success || json.Unmarshal(out.Data, &v) != nil || v.PID == 0 {
			t.Fatalf("faulty_ok: %+v", out)
		}
		return v.PID
	}
	first := pidOf(call(t, sim, "faulty_ok", `{}`))

	out := call(t, sim, "faulty_crash", `{}`)
	if out.Success || !strings.Contains(out.Error, "plugin faulty crashed during the call") {
		t.Fatalf("the crashed call's result: %+v", out)
	}
	d.logLine("plugin crashed; restarting it", "plugin=faulty", "crashes=1")
	d.logLine("level=ERROR", "plugin process exited", "plugin=faulty", "exit status 3")
	if !procs.Gone(first, 15*time.Second) {
		t.Fatalf("the crashed process %d still runs", first)
	}
	// Wait for the restart: calls in between fail with a message that says so.
	var second int
	deadline := time.Now().Add(15 * time.Second)
	for second == 0 {
		out := call(t, sim, "faulty_ok", `{}`)
		switch {
		case out.Success:
			second = pidOf(out)
		case !strings.Contains(out.Error, "crashed and is being restarted"):
			t.Fatalf("a call during the restart: %+v", out)
		case time.Now().After(deadline):
			t.Fatal("the crashed plugin was not restarted")
		default:
			time.Sleep(20 * time.Millisecond)
		}
	}
	if second == first {
		t.Fatal("the same process answers after the crash")
	}
	if st := d.pluginList()["faulty"]; st.State != "running" || st.Restarts != 1 || st.PID != second {
		t.Fatalf("after one restart: %+v", st)
	}
	if got := len(sim.Registers()); got != regs {
		t.Fatalf("the restart sent a register (%d, was %d) though the services did not change", got, regs)
	}

	out = call(t, sim, "faulty_crash", `{}`)
	if out.Success || !strings.Contains(out.Error, "crashed") {
		t.Fatalf("the second crashed call's result: %+v", out)
	}
	r := waitRegisters(t, sim, regs+1, "the parked plugin's services to leave")
	for name := range r.Services {
		if strings.HasPrefix(name, "faulty_") {
			t.Fatalf("the parked plugin's %s is still registered", name)
		}
	}
	if _, ok := r.Services["get_current_time"]; !ok {
		t.Fatal("get_current_time left the register")
	}
	d.logLine("plugin keeps crashing; parked and its services removed", "plugin=faulty", "crashes=2")
	if st := d.pluginList()["faulty"]; st.State != "parked" || st.PID != 0 || !strings.Contains(st.LastError, "crashed 2 times") {
		t.Fatalf("after parking: %+v", st)
	}
	if !procs.Gone(second, 15*time.Second) {
		t.Fatalf("the parked plugin's process %d still runs", second)
	}
	if out := call(t, sim, "faulty_ok", `{}`); out.Success || !strings.Contains(out.Error, "unknown service") {
		t.Fatalf("a call to the parked plugin: %+v", out)
	}
	loop.await(t, loop.count(), 3)
	loop.finish(t)
	if sim.Connections() != 1 {
		t.Fatalf("%d connections", sim.Connections())
	}
}

// TestPluginHangsPastDeadline: a call that never returns ends with a timeout
// result and a log line; the plugin and everything else keep serving.
func TestPluginHangsPastDeadline(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) {
		copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock"))
		copyExec(t, testPlugin(t, "faulty", ""), filepath.Join(dir, "faulty"))
	})
	pluginsReady(t, sim)
	loop := startCallLoop(sim)
	pid := d.running(sim, "faulty", "faulty_ok").PID
	for range 3 {
		out := call(t, sim, "faulty_hang", `{}`)
		if out.Success || !strings.Contains(out.Error, "faulty_hang did not answer within 300ms") {
			t.Fatalf("the hung call's result: %+v", out)
		}
	}
	d.logLine("call failed", "method=faulty_hang", "did not answer within 300ms")
	out := call(t, sim, "faulty_ok", `{}`)
	if !out.Success || !strings.Contains(string(out.Data), `"pid":`+strconv.Itoa(pid)) {
		t.Fatalf("the plugin stopped serving after a hung call: %+v (pid was %d)", out, pid)
	}
	loop.await(t, loop.count(), 3)
	loop.finish(t)
	if st := d.pluginList()["faulty"]; st.State != "running" || st.Restarts != 0 {
		t.Fatalf("%+v", st)
	}
}

// TestPluginBadBinaries installs binaries that are not working plugins while
// the host runs: each is refused with a log line that says what went wrong,
// registers nothing, and leaves the host serving; a broken binary that
// replaces a working plugin leaves the old instance serving.
func TestPluginBadBinaries(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d, dir := startPluginHost(t, sim, func(dir string) {
		copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock"))
		copyExec(t, testPlugin(t, "versioned", "1"), filepath.Join(dir, "versioned"))
	})
	pluginsReady(t, sim)
	loop := startCallLoop(sim)
	regs := len(sim.Registers())
	stage := t.TempDir()

	junk := make([]byte, 64<<10)
	rand.Read(junk)
	for _, tc := range []struct {
		name    string
		write   func(path string)
		logWant []string // parts of the log line that says what happened
	}{
		{"noisy", func(p string) { copyExec(t, testPlugin(t, "noisy", ""), p) },
			[]string{"hello from noisy before the handshake", "does it print nothing to stdout"}},
		{"script", func(p string) { os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), 0o755) },
			[]string{"it did not start as an agenthost plugin", "Unrecognized remote plugin message: hi"}},
		{"corrupt", func(p string) { os.WriteFile(p, junk, 0o755) },
			[]string{"exec format error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := loop.count()
			tmp := filepath.Join(stage, tc.name)
			tc.write(tmp)
			sh(t, "mv", tmp, filepath.Join(dir, tc.name))
			line := d.logLine(append([]string{"plugin cannot run", "plugin=" + tc.name}, tc.logWant...)...)
			t.Logf("log: %s", line)
			st := d.pluginList()[tc.name]
			if st.State != "broken" || st.PID != 0 || st.LastError == "" {
				t.Fatalf("agenthost plugins: %+v", st)
			}
			loop.await(t, n, 3)
			if out := call(t, sim, "versioned_info", `{}`); !out.Success {
				t.Fatalf("versioned_info: %+v", out)
			}
		})
	}

	// A broken build replacing a working plugin: the old one keeps serving.
	n := loop.count()
	before := d.pluginList()["versioned"]
	os.WriteFile(filepath.Join(stage, "v"), junk, 0o755)
	sh(t, "mv", filepath.Join(stage, "v"), filepath.Join(dir, "versioned"))
	d.logLine("the new version of a plugin does not work; the old one keeps serving", "plugin=versioned", "exec format error")
	if out := call(t, sim, "versioned_info", `{}`); !out.Success || !strings.Contains(string(out.Data), `"version":"1"`) {
		t.Fatalf("the old instance does not serve: %+v", out)
	}
	if st := d.pluginList()["versioned"]; st.State != "running" || st.PID != before.PID || !strings.Contains(st.LastError, "exec format error") {
		t.Fatalf("agenthost plugins after a broken replacement: %+v (was %+v)", st, before)
	}
	loop.await(t, n, 3)
	loop.finish(t)

	if got := len(sim.Registers()); got != regs {
		t.Fatalf("broken binaries changed the register: %d registers, was %d: %v", got, regs, sim.Services())
	}
	if sim.Connections() != 1 {
		t.Fatalf("%d connections", sim.Connections())
	}
}

// TestPluginProcessesEndWithHost: no plugin process outlives the host, after
// a SIGTERM (the host stops them) and after a SIGKILL of the host (the
// kernel kills them: Pdeathsig). "bare" is served by go-plugin without the
// SDK, which also watches its parent, so only the host's measures end it.
func TestPluginProcessesEndWithHost(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			sim := newSim(t, voicetest.Options{})
			root := filepath.Join(t.TempDir(), "files")
			d, dir := startPluginHost(t, sim, func(dir string) {
				for _, name := range []string{"clock", "files", "sysinfo"} {
					copyExec(t, bundled(t, name), filepath.Join(dir, name))
				}
				copyExec(t, testPlugin(t, "bare", ""), filepath.Join(dir, "bare"))
			}, "plugins.config.files.root="+root, "plugins.sandbox.files.write="+root)
			pluginsReady(t, sim)
			var pids []int
			for _, p := range [][2]string{{"bare", "bare_pid"}, {"clock", "get_current_time"}, {"files", "list_files"}, {"sysinfo", "get_system_info"}} {
				pids = append(pids, d.running(sim, p[0], p[1]).PID)
			}
			list := d.pluginList()
			if out := call(t, sim, "bare_pid", `{}`); !out.Success || string(out.Data) != strconv.Itoa(list["bare"].PID) {
				t.Fatalf("bare_pid: %+v", out)
			}
			if sig == syscall.SIGTERM {
				start := time.Now()
				if err := d.stop(); err != nil {
					t.Fatalf("exit after SIGTERM: %v", err)
				}
				t.Logf("the host stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
			} else {
				d.cmd.Process.Signal(sig)
				<-d.exited
				d.exited <- nil
			}
			for i, pid := range pids {
				if !procs.Gone(pid, 15*time.Second) {
					t.Errorf("plugin process %d (%d of %d) outlived the host", pid, i+1, len(pids))
				}
			}
			if left := procs.In(dir); len(left) > 0 {
				t.Errorf("processes from the plugin folder remain: %v", left)
			}
			if sig == syscall.SIGTERM {
				socks, _ := os.ReadDir(filepath.Join(d.dir, "run", "p"))
				for _, s := range socks {
					t.Errorf("a plugin socket was left behind after a clean stop: %s", s.Name())
				}
			}
		})
	}
}

// TestPluginsCommandAndCall: `agenthost plugins` lists each plugin with its
// path, version, state, services and restarts, and `agenthost call` reaches
// a plugin's service through the daemon, and with no daemon running by
// starting the plugins itself.
func TestPluginsCommandAndCall(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	d, dir := startPluginHost(t, sim, func(dir string) {
		for _, name := range []string{"clock", "sysinfo"} {
			copyExec(t, bundled(t, name), filepath.Join(dir, name))
		}
		copyExec(t, testPlugin(t, "versioned", "7"), filepath.Join(dir, "versioned"))
	})
	pluginsReady(t, sim)
	for _, p := range [][2]string{{"clock", "get_current_time"}, {"sysinfo", "get_system_info"}, {"versioned", "versioned_info"}} {
		d.running(sim, p[0], p[1])
	}
	list := d.pluginList()
	out, err := d.cli("plugins")
	if err != nil {
		t.Fatalf("agenthost plugins: %v\n%s", err, out)
	}
	t.Logf("agenthost plugins:\n%s", out)
	for _, p := range []struct{ name, version, services string }{
		{"clock", "1.0.0", "get_current_time"},
		{"sysinfo", list["sysinfo"].Version, "get_system_info"},
		{"versioned", "7", "versioned_info"},
	} {
		st := list[p.name]
		if p.version == "" || st.PID == 0 {
			t.Fatalf("%s: %+v", p.name, st)
		}
		want := fmt.Sprintf("%s %s  running  pid %d  restarts 0\n  path: %s\n  services: %s\n",
			p.name, p.version, st.PID, filepath.Join(dir, p.name), p.services)
		if !strings.Contains(out, want) {
			t.Errorf("agenthost plugins lacks\n%s", want)
		}
	}

	callOut, err := d.cli("call", "get_current_time", `{"format":"simple"}`)
	var res voice.Outcome
	if err != nil || json.Unmarshal([]byte(callOut), &res) != nil || !res.Success || !simpleTime.Match(res.Data) {
		t.Fatalf("agenthost call with the daemon running: %v\n%s", err, callOut)
	}
	d.logLine("call", "method=get_current_time", "call_id=local-") // it went through the daemon

	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	callOut, err = d.cli("call", "get_current_time", `{"format":"simple"}`)
	if i := strings.Index(callOut, "{"); i > 0 {
		callOut = callOut[i:] // after the line that says it runs standalone
	}
	res = voice.Outcome{}
	if err != nil || json.Unmarshal([]byte(callOut), &res) != nil || !res.Success || !simpleTime.Match(res.Data) {
		t.Fatalf("agenthost call without a daemon: %v\n%s", err, callOut)
	}
	callOut, err = d.cli("call", "versioned_info", `{}`)
	if err != nil || !strings.Contains(callOut, `"version": "7"`) {
		t.Fatalf("agenthost call versioned_info without a daemon: %v\n%s", err, callOut)
	}
	if left := procs.In(dir); len(left) > 0 {
		t.Errorf("agenthost call left plugin processes: %v", left)
	}
	if _, err := d.cli("call", "no_such_service", `{}`); err == nil {
		t.Error("a call to an unknown service succeeded")
	}
}

// TestPluginSHA256Pin: a binary whose digest does not match its pin is
// refused with a message naming the pin; a matching pin runs.
func TestPluginSHA256Pin(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	sysinfo := bundled(t, "sysinfo")
	b, err := os.ReadFile(sysinfo)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	wrong := strings.Repeat("ab", 32)
	d, _ := startPluginHost(t, sim, func(dir string) {
		copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock"))
		copyExec(t, sysinfo, filepath.Join(dir, "sysinfo"))
	}, "plugins.sha256.clock="+wrong, "plugins.sha256.sysinfo="+strings.ToUpper(hex.EncodeToString(sum[:])))
	pluginsReady(t, sim)
	line := d.logLine("plugin cannot run", "plugin=clock", "does not match plugins.sha256.clock", wrong)
	t.Logf("log: %s", line)
	svcs := sim.Services()
	if _, ok := svcs["get_current_time"]; ok {
		t.Fatal("the refused clock plugin's service is registered")
	}
	if _, ok := svcs["get_system_info"]; !ok {
		t.Fatalf("the pinned sysinfo plugin is not registered: %v", svcs)
	}
	list := d.pluginList()
	if st := list["clock"]; st.State != "broken" || st.PID != 0 || !strings.Contains(st.LastError, "plugins.sha256.clock") {
		t.Fatalf("clock: %+v", st)
	}
	if st := list["sysinfo"]; (st.State != "running" && st.State != "idle") || st.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("sysinfo: %+v", st)
	}
	if out := call(t, sim, "get_current_time", `{}`); out.Success || !strings.Contains(out.Error, "unknown service") {
		t.Fatalf("%+v", out)
	}
	if out, err := d.cli("plugins"); err != nil || !strings.Contains(out, "last error: binary sha256") || !strings.Contains(out, "plugins.sha256.clock") {
		t.Fatalf("agenthost plugins does not show the pin error: %v\n%s", err, out)
	}
}
