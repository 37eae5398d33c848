package pluginmgr_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
)

// lingering lists the live grandchildren the orphaner plugin left with tag.
func lingering(tag string) []int {
	var out []int
	for _, p := range procs.Find("-linger " + tag) {
		out = append(out, p.PID)
	}
	return out
}

// TestNoDescendantOutlivesItsPlugin: a plugin that double-forks a setsid
// grandchild (out of its process group and session, an orphan at once)
// leaves none running once its process is replaced by a new build, nor
// once the manager stops.
func TestNoDescendantOutlivesItsPlugin(t *testing.T) {
	tag := fmt.Sprintf("plugin-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		for _, pid := range lingering(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	bin := testbin.Build(t, "./cmd/agenthost/testdata/plugins/orphaner")
	x := startManager(t, func(dir string) { install(t, bin, dir, "orphaner", 0) }, nil)
	spawn := func() int {
		t.Helper()
		before := lingering(tag)
		if out := x.call("orphaner_spawn", `{"tag":"`+tag+`"}`); !out.Success {
			t.Fatalf("orphaner_spawn: %+v", out)
		}
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, pid := range lingering(tag) {
				if !slices.Contains(before, pid) {
					return pid
				}
			}
		}
		t.Fatal("no grandchild appeared")
		return 0
	}
	first := spawn()
	old := x.waitStatus("orphaner", "running", func(s pluginmgr.Status) bool { return s.State == "running" && s.PID != 0 })
	install(t, bin, x.dir, "orphaner", 1)
	x.waitStatus("orphaner", "the new build", func(s pluginmgr.Status) bool { return s.SHA256 != old.SHA256 })
	if !procs.Gone(old.PID, 20*time.Second) {
		t.Fatalf("the old plugin process %d still runs", old.PID)
	}
	if !procs.Gone(first, 15*time.Second) {
		t.Errorf("the grandchild %d outlived the plugin process that left it", first)
	}
	second := spawn()
	x.stop()
	if !procs.Gone(second, 15*time.Second) {
		t.Errorf("the grandchild %d outlived the manager's stop", second)
	}
}
