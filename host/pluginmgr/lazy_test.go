package pluginmgr_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/pluginmgr"
)

// noProcesses waits until no process runs from dir.
func noProcesses(t *testing.T, dir, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(procs.In(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes still run from %s: %v", what, dir, procs.In(dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lazyOn(state string, idle time.Duration) func(p *config.Plugins) {
	return func(p *config.Plugins) {
		p.Lazy, p.StateDir, p.IdleStop = true, state, config.Duration(idle)
		p.Debounce = config.Duration(50 * time.Millisecond)
	}
}

// TestLazyPluginLifeCycle: a binary not in the cache is started once to be
// described, then stopped; its services stay registered; the first call
// starts it and is served by it; without calls it stops after idle_stop. A
// second host start finds the description in the cache and starts nothing.
func TestLazyPluginLifeCycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins")
	os.Mkdir(dir, 0o755)
	install(t, faultyBin(t), dir, "faulty", 0)
	state := t.TempDir()

	x := runManager(t, dir, lazyOn(state, 300*time.Millisecond))
	if st := x.status("faulty"); st.State != "idle" || st.PID != 0 || st.Version != "1.0.0" {
		t.Fatalf("after the first start: %+v", st)
	}
	if _, ok := x.reg.Lookup("faulty_ok"); !ok {
		t.Fatal("the lazy plugin's services are not registered")
	}
	noProcesses(t, dir, "after describing")
	if n := strings.Count(x.log.String(), `level=INFO msg="plugin started"`); n != 1 {
		t.Fatalf("%d starts to describe the plugin, want 1", n)
	}

	out := x.call("faulty_ok", `{}`)
	running := x.status("faulty")
	if !out.Success || running.State != "running" || !strings.Contains(string(out.Data), fmt.Sprint(running.PID)) {
		t.Fatalf("the first call: %+v, status %+v", out, running)
	}
	x.waitStatus("faulty", "idle again", func(s pluginmgr.Status) bool { return s.State == "idle" && s.PID == 0 })
	if !procs.Gone(running.PID, 15*time.Second) {
		t.Fatalf("the idle process %d still runs", running.PID)
	}
	x.stop()

	y := runManager(t, dir, lazyOn(state, time.Minute))
	if st := y.status("faulty"); st.State != "idle" || st.Version != "1.0.0" {
		t.Fatalf("after a restart of the host: %+v", st)
	}
	if strings.Contains(y.log.String(), "starting plugin") {
		t.Fatal("a cached plugin was started to describe it")
	}
	if out := y.call("faulty_ok", `{}`); !out.Success {
		t.Fatalf("%+v", out)
	}
}

// TestLazyPluginCorruptCacheIsRebuilt: a cache entry that does not read
// back is ignored; the binary is described again and the entry rewritten.
func TestLazyPluginCorruptCacheIsRebuilt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins")
	os.Mkdir(dir, 0o755)
	install(t, faultyBin(t), dir, "faulty", 0)
	state := t.TempDir()
	x := runManager(t, dir, lazyOn(state, time.Minute))
	x.stop()
	entries, _ := filepath.Glob(filepath.Join(state, "plugin-descriptions", "faulty-*.json"))
	if len(entries) != 1 {
		t.Fatalf("cache entries %v", entries)
	}
	good, _ := os.ReadFile(entries[0])
	for _, bad := range []string{"{not json", `{"format":1,"plugin":"faulty","sha256":"0000","services":[]}`,
		strings.Replace(string(good), `"faulty_ok"`, `"faulty ok!"`, 1)} {
		os.WriteFile(entries[0], []byte(bad), 0o600)
		y := runManager(t, dir, lazyOn(state, time.Minute))
		if !strings.Contains(y.log.String(), "starting plugin") {
			t.Fatalf("a corrupt entry was trusted: %q", bad)
		}
		if out := y.call("faulty_ok", `{}`); !out.Success {
			t.Fatalf("%+v", out)
		}
		y.stop()
		if b, _ := os.ReadFile(entries[0]); string(b) != string(good) {
			t.Fatalf("the entry was not rebuilt after %q: %s", bad, b)
		}
	}
}

// TestLazyPluginReloadDescribesFirst: a changed binary of an idle lazy
// plugin is described before its old description leaves the register, and
// a removed one leaves no service behind.
func TestLazyPluginReloadDescribesFirst(t *testing.T) {
	x := startManager(t, func(dir string) { install(t, faultyBin(t), dir, "faulty", 0) }, lazyOn(t.TempDir(), time.Minute))
	before := x.status("faulty")
	install(t, faultyBin(t), x.dir, "faulty", 7)
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(x.log.String(), `level=INFO msg="plugin started"`) < 2 { // one per binary
		if _, ok := x.reg.Lookup("faulty_ok"); !ok {
			t.Fatal("the services left the register during the reload")
		}
		if time.Now().After(deadline) {
			t.Fatal("the new binary was never described")
		}
		time.Sleep(time.Millisecond)
	}
	after := x.waitStatus("faulty", "idle with the new binary", func(s pluginmgr.Status) bool { return s.SHA256 != before.SHA256 && s.State == "idle" })
	noProcesses(t, x.dir, "after the reload")
	if out := x.call("faulty_ok", `{}`); !out.Success {
		t.Fatalf("%+v", out)
	}
	if st := x.status("faulty"); st.SHA256 != after.SHA256 || st.State != "running" {
		t.Fatalf("%+v", st)
	}
	os.Remove(filepath.Join(x.dir, "faulty"))
	x.waitStatus("faulty", "removed", func(s pluginmgr.Status) bool { return s.Name == "" })
	if _, ok := x.reg.Lookup("faulty_ok"); ok {
		t.Fatal("a removed lazy plugin's service is still registered")
	}
	noProcesses(t, x.dir, "after the removal")
}
