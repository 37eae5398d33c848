package pluginmgr_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/pluginmgr"
)

// waitLog waits until the manager's log has a line with every one of parts.
func (x *mgr) waitLog(parts ...string) {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := x.log.Line(parts...); ok {
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the log never showed a line with %q", parts)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPluginManagerReconfigureChecksPins: a pin changed by a reload is
// checked at once against each plugin's binary: a running plugin it does not
// match keeps serving and the log says it will not start again; an idle
// (lazy) one is refused at once rather than at its next call; removing the
// wrong pin tries the refused plugin again.
func TestPluginManagerReconfigureChecksPins(t *testing.T) {
	x := startManager(t, func(dir string) {
		install(t, clockBin(t), dir, "clock", 0)
		install(t, faultyBin(t), dir, "faulty", 0)
	}, func(p *config.Plugins) { p.LazyOverrides = map[string]bool{"clock": false, "faulty": true} })
	x.running("clock", "get_current_time")
	x.waitStatus("faulty", "idle", func(s pluginmgr.Status) bool { return s.State == "idle" })

	plugins := config.Default().Plugins
	plugins.LazyOverrides = map[string]bool{"clock": false, "faulty": true}
	wrong := strings.Repeat("ab", 32)
	plugins.SHA256 = map[string]string{"clock": wrong, "faulty": wrong}
	x.m.Reconfigure(plugins, nil)
	x.waitLog("the new pin does not match the running plugin", "plugin=clock", "plugins.sha256.clock")
	x.waitStatus("faulty", "refused", func(s pluginmgr.Status) bool {
		return s.State == "broken" && strings.Contains(s.LastError, "plugins.sha256.faulty")
	})
	if out := x.call("faulty_ok", `{}`); out.Success || !strings.Contains(out.Error, "unknown service") {
		t.Fatalf("the refused plugin's service: %+v", out)
	}
	if out := x.call("get_current_time", `{}`); !out.Success {
		t.Fatalf("the running plugin stopped serving: %+v", out)
	}
	if st := x.status("clock"); st.State != "running" {
		t.Fatalf("clock: %+v", st)
	}

	plugins.SHA256 = nil
	x.m.Reconfigure(plugins, nil)
	x.waitLog("broken plugin's settings changed; trying it again", "plugin=faulty", "plugins.sha256.faulty")
	x.waitStatus("faulty", "back", ready)
	if out := x.call("faulty_ok", `{}`); !out.Success {
		t.Fatalf("faulty after the pin was removed: %+v", out)
	}
}
