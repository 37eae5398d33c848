package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// startYAMLHost runs the host on a file of base settings followed by extra
// (raw YAML, so that the order of its keys is the test's).
func startYAMLHost(t *testing.T, sim *voicetest.Server, dir, extra string) *hostProc {
	t.Helper()
	conf := fmt.Sprintf(`server: {address: %q, reconnect: {base: 20ms, cap: 100ms}}
log: {level: info}
plugins: {runtime_dir: %q, dirs: [%q], state_dir: %q, restart: {base: 1s, cap: 2s}}
audio: {backend: none}
conversation: {push_to_talk_key: false}
`, sim.Addr(), filepath.Join(dir, "run"), filepath.Join(dir, "plugins"), filepath.Join(dir, "state")) + extra
	path := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return startHostArgs(t, testbinHost(t), []string{"run", "--config", path}, dir)
}

// mcpNamesServer is a YAML flow mapping that runs testdata/mcpnames.
func mcpNamesServer(bin string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("{command: %q, args: [%s]}", bin, strings.Join(quoted, ", "))
}

// waitLong is waitFor with a deadline for starts that wait on each other.
func waitLong(t *testing.T, sim *voicetest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sim.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func registered(sim *voicetest.Server, name string) bool {
	_, ok := sim.Services()[name]
	return ok
}

// mcpServer is the named MCP server in `agenthost status`.
func mcpServer(t *testing.T, d *hostProc, name string) mcpServerStatus {
	t.Helper()
	st := d.status(t)
	for _, s := range st.MCP {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no MCP server %s in the status: %+v", name, st.MCP)
	return mcpServerStatus{}
}

// TestClashingMCPServersFollowTheConfiguredOrder: two MCP servers offer
// the same tool name. The one listed first in the file (zulu, listed
// before alpha) owns it, whichever of the two answers first at start-up,
// and keeps it through a restart: while it restarts the name is not handed
// to the other, and calls go to it once it is back.
func TestClashingMCPServersFollowTheConfiguredOrder(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t, "./cmd/agenthost/testdata/mcpnames")
	for _, late := range []string{"zulu", "alpha"} {
		t.Run(late+" answers last", func(t *testing.T) {
			early := map[string]string{"zulu": "alpha", "alpha": "zulu"}[late]
			dir := t.TempDir()
			release := filepath.Join(dir, "release")
			server := func(name string) string {
				args := []string{"-name", name, "-tools", "shared,only_" + name}
				if name == late {
					args = append(args, "-hold", release)
				}
				return mcpNamesServer(bin, args...)
			}
			sim := newSim(t, voicetest.Options{})
			d := startYAMLHost(t, sim, dir, fmt.Sprintf("mcp:\n  servers:\n    zulu: %s\n    alpha: %s\n", server("zulu"), server("alpha")))
			waitLong(t, sim, early+"'s tools", func() bool { return registered(sim, "only_"+early) })
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			waitLong(t, sim, late+"'s tools", func() bool { return registered(sim, "only_"+late) })
			wantOwner(t, sim, "zulu")

			// zulu restarts: its names are not handed to alpha meanwhile.
			regs := len(sim.Registers())
			pid := mcpServer(t, d, "zulu").Session.PID
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill zulu (pid %d): %v", pid, err)
			}
			waitLong(t, sim, "zulu's tools to leave while it restarts", func() bool { return !registered(sim, "only_zulu") })
			waitLong(t, sim, "zulu back after its restart", func() bool { return registered(sim, "only_zulu") })
			for i, r := range sim.Registers()[regs:] {
				if def, ok := r.Services["shared"]; ok && !strings.Contains(def.Description, "zulu") {
					t.Errorf("register %d after zulu's crash has alpha's shared: %q", regs+i+1, def.Description)
				}
			}
			if s := mcpServer(t, d, "zulu"); s.Restarts < 1 {
				t.Errorf("zulu's status shows no restart: %+v", s)
			}
			wantOwner(t, sim, "zulu")
		})
	}
}

// wantOwner checks that the simulator's register and a call of "shared"
// both come from the named server.
func wantOwner(t *testing.T, sim *voicetest.Server, name string) {
	t.Helper()
	if def := sim.Services()["shared"]; !strings.Contains(def.Description, "offered by "+name) {
		t.Errorf("the register's shared is %q, want %s's", def.Description, name)
	}
	if out := call(t, sim, "shared", `{}`); !out.Success || !strings.Contains(string(out.Data), name) {
		t.Errorf("a call of shared went to %s (%s), want %s", out.Data, out.Error, name)
	}
}

// TestHugeToolsDoNotEmptyTheRegister: an MCP server with a 2 MB tool
// description and another with 150 tools of 8 kB each. The simulator, with
// its 1 MiB frame limit, gets a register it accepts: the description cut,
// the services that do not fit services.max_register left out (named in
// `agenthost status` and the log), every other service there.
func TestHugeToolsDoNotEmptyTheRegister(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t, "./cmd/agenthost/testdata/mcpnames")
	sim := newSim(t, voicetest.Options{})
	d := startYAMLHost(t, sim, t.TempDir(), fmt.Sprintf("mcp:\n  servers:\n    big: %s\n    many: %s\n",
		mcpNamesServer(bin, "-name", "big", "-tools", "only_big", "-big", "2000000"),
		mcpNamesServer(bin, "-name", "many", "-tools", "only_many", "-many", "150", "-many-desc", "8000")))
	waitLong(t, sim, "a register with both servers' tools", func() bool {
		return registered(sim, "get_current_time") && registered(sim, "only_big") && registered(sim, "many_000")
	})
	size := 0
	for _, r := range sim.Received() {
		if r.Frame.Type == voice.TypeMCP && strings.Contains(string(r.Frame.Payload), `"type":"register"`) {
			size = len(r.Frame.Payload)
		}
	}
	svcs := sim.Services()
	t.Logf("register: %d bytes of payload, %d services; the simulator's frame limit is %d bytes", size, len(svcs), voice.DefaultMaxFrame)
	if size == 0 || size > 512<<10 {
		t.Errorf("register payload of %d bytes, want at most services.max_register (512 KiB)", size)
	}
	if desc := svcs["huge"].Description; len(desc) == 0 || len(desc) > 8<<10 {
		t.Errorf("huge's description: %d bytes, want it cut to 8 KiB", len(desc))
	}
	if registered(sim, "many_149") {
		t.Error("all 150 tools of 8 kB were registered, over the bound")
	}
	st := d.status(t)
	first := ""
	if len(st.LeftOut) > 0 {
		first = st.LeftOut[0]
	}
	t.Logf("left out: %d services; the first: %s", len(st.LeftOut), first)
	if !slices.ContainsFunc(st.LeftOut, func(s string) bool {
		return strings.Contains(s, `"many_149"`) && strings.Contains(s, "services.max_register")
	}) {
		t.Errorf("status left_out does not name many_149 and the setting: %q", st.LeftOut)
	}
	d.logShows("many_149")
	if out := call(t, sim, "only_big", `{}`); !out.Success {
		t.Errorf("only_big: %+v", out)
	}
}

// TestALateMCPServerDoesNotHoldUpTheOthers: an MCP server that does not
// answer initialize does not keep the host off the voice server: the
// tools that are ready are registered and served at once, and the late
// server joins with a new register when it answers. (It answers when the
// test has seen the others served, or after 8 s: less than the 10 s the
// host used to wait for every server before it connected.)
func TestALateMCPServerDoesNotHoldUpTheOthers(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t, "./cmd/agenthost/testdata/mcpnames")
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	sim := newSim(t, voicetest.Options{})
	testbinHost(t) // built before the clock starts
	start := time.Now()
	startYAMLHost(t, sim, dir, fmt.Sprintf("mcp:\n  servers:\n    slow: %s\n    fast: %s\n",
		mcpNamesServer(bin, "-name", "slow", "-tools", "only_slow", "-hold", release),
		mcpNamesServer(bin, "-name", "fast", "-tools", "only_fast")))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	servedEarly := sim.WaitFor(ctx, func() bool { return registered(sim, "only_fast") }) == nil
	cancel()
	took := time.Since(start)
	var early string
	if servedEarly {
		out := call(t, sim, "only_fast", `{}`)
		early = string(out.Data) + out.Error
	}
	regs := len(sim.Registers())
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitLong(t, sim, "the late server's tools", func() bool { return registered(sim, "only_slow") })
	if !servedEarly {
		t.Fatalf("the ready server's tools were not registered while the late server had not answered (%d registers in the %s before it answered)",
			regs, took.Round(time.Millisecond))
	}
	t.Logf("the ready server's tools were registered %s after the host started; the late one joined in register %d", took.Round(time.Millisecond), len(sim.Registers()))
	if !strings.Contains(early, "fast") {
		t.Errorf("a call of only_fast while the late server had not answered: %s", early)
	}
	if len(sim.Registers()) <= regs {
		t.Errorf("the late server joined without a new register")
	}
	if out := call(t, sim, "only_slow", `{}`); !out.Success || !strings.Contains(string(out.Data), "slow") {
		t.Errorf("only_slow: %+v", out)
	}
}

// TestAnMCPServerCannotTakeTheDevicesNames: an MCP server offering
// mute_microphone and get_device_status does not get them: the register's
// are the device's, a call of mute_microphone mutes the speaker's
// microphone, and the clash is an error in the log and in `agenthost
// status`, naming the fix. The same server under a prefix registers its
// tools under the prefixed names.
func TestAnMCPServerCannotTakeTheDevicesNames(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t, "./cmd/agenthost/testdata/mcpnames")
	tools := "mute_microphone,get_device_status,only_evil"
	sim := newSim(t, voicetest.Options{})
	d := startYAMLHost(t, sim, t.TempDir(), fmt.Sprintf("mcp:\n  servers:\n    evil: %s\n    fixed: {command: %q, args: [-name, fixed, -tools, %q], prefix: fixed_}\n",
		mcpNamesServer(bin, "-name", "evil", "-tools", tools), bin, tools))
	waitLong(t, sim, "both servers' tools", func() bool {
		return registered(sim, "only_evil") && registered(sim, "fixed_mute_microphone")
	})
	for _, name := range []string{"mute_microphone", "get_device_status"} {
		if def := sim.Services()[name]; strings.Contains(def.Description, "offered by") {
			t.Errorf("the register's %s is the MCP server's: %q", name, def.Description)
		}
	}
	out := call(t, sim, "mute_microphone", `{}`)
	if !out.Success || !strings.Contains(string(out.Data), `"microphone_muted":true`) {
		t.Errorf("mute_microphone: %+v", out)
	}
	if !d.device(t).MicrophoneMuted {
		t.Error("mute_microphone answered, but the daemon's microphone is on")
	}
	if out := call(t, sim, "fixed_mute_microphone", `{}`); !out.Success || !strings.Contains(string(out.Data), "fixed") {
		t.Errorf("fixed_mute_microphone: %+v", out)
	}
	line := d.logLine("level=ERROR", `\"mute_microphone\"`, "mcp:evil")
	if !strings.Contains(line, "services.prefixes.evil") {
		t.Errorf("the clash's log line names no fix: %s", line)
	}
	conflicts := strings.Join(d.status(t).Conflicts, "\n")
	for _, want := range []string{`"mute_microphone"`, `"get_device_status"`, "reserved", "mcp:evil"} {
		if !strings.Contains(conflicts, want) {
			t.Errorf("agenthost status's conflicts do not name %s: %q", want, conflicts)
		}
	}
}
