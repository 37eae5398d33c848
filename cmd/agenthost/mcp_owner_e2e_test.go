package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// toolText calls a tool and returns its text and isError.
func toolText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

// TestMCPBeforeTheDaemonLeavesTheDeviceToIt: `agenthost mcp` started with
// no daemon running keeps no device of its own: a call that would change
// the speaker (mute the microphone, set a timer) answers that the daemon
// is not running, and nothing is written to the state folder. Once the
// daemon runs on the same configuration, the same session's calls reach
// it: its microphone is muted and its timer set. `agenthost call` without
// a daemon answers the same.
func TestMCPBeforeTheDaemonLeavesTheDeviceToIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	sets := []string{"plugins.runtime_dir=" + filepath.Join(dir, "run"), "plugins.dirs=" + filepath.Join(dir, "plugins"),
		"plugins.state_dir=" + state, "audio.backend=none", "log.level=debug"}
	script := mcpCommand(t, dir, sets)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(script)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for _, call := range []struct {
		name string
		args map[string]any
	}{{"mute_microphone", nil}, {"set_timer", map[string]any{"seconds": 600, "label": "tea"}}, {"set_volume", map[string]any{"volume": 20}}} {
		text, isErr := toolText(t, ctx, cs, call.name, call.args)
		if !isErr || !strings.Contains(text, "daemon is not running") {
			t.Errorf("%s without a daemon: %q (isError %v), want an error saying the daemon is not running", call.name, text, isErr)
		}
	}
	// `agenthost call` without a daemon likewise.
	cli := []string{"call", "--config", filepath.Join(dir, "none.yaml")}
	for _, s := range sets {
		cli = append(cli, "--set", s)
	}
	out, err := exec.Command(testbinHost(t), append(cli, "mute_microphone")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "daemon is not running") {
		t.Errorf("agenthost call mute_microphone without a daemon: %v\n%s", err, out)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "device", "*")); len(files) > 0 {
		t.Errorf("agenthost mcp without a daemon wrote the device's state: %v", files)
	}

	sim := newSim(t, voicetest.Options{})
	args := []string{"run", "--config", filepath.Join(dir, "none.yaml"), "--set", "server.address=" + sim.Addr()}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	d := startHostArgs(t, testbinHost(t), args, dir)
	d.sets = append(sets, "server.address="+sim.Addr())
	d.logShows("control socket ready")

	text, isErr := toolText(t, ctx, cs, "mute_microphone", nil)
	if isErr || !strings.Contains(text, `"microphone_muted":true`) {
		t.Errorf("mute_microphone with the daemon running: %q (isError %v)", text, isErr)
	}
	if !d.device(t).MicrophoneMuted {
		t.Error("mute_microphone answered through agenthost mcp, but the daemon's microphone is on")
	}
	if text, isErr := toolText(t, ctx, cs, "set_timer", map[string]any{"seconds": 600, "label": "tea"}); isErr {
		t.Errorf("set_timer with the daemon running: %q", text)
	}
	d.logLine("msg=call", "method=set_timer", "success=true") // the daemon ran it
	if n := d.device(t).Timers; n != 1 {
		t.Errorf("the daemon has %d timers after set_timer through agenthost mcp, want 1", n)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "mcp.log"))
	if t.Failed() {
		t.Logf("agenthost mcp's log:\n%s", log)
	}
}
