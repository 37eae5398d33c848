package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestStatusSaysTheWakeWordWaitsForARestart: the wake word turned on in
// the file of a daemon that reads a microphone (audio.backend: file)
// waits for a restart; status says so, not that there is no microphone.
func TestStatusSaysTheWakeWordWaitsForARestart(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	mic := toneFile(t, filepath.Join(t.TempDir(), "mic.wav"), 1)
	f := startFileHost(t, sim, map[string]any{"audio": map[string]any{"backend": "file", "input_file": mic}})
	ready(t, sim, 1)
	f.edit(t, map[string]any{"conversation": map[string]any{"wake_word": map[string]any{"models": []any{"hey_jarvis"}}}})
	f.logShows("apply only after a restart")
	var st hostStatusWake
	st.get(t, f.hostProc)
	if st.WakeWord.On || strings.Contains(st.WakeWord.Why, "no microphone") || !strings.Contains(st.WakeWord.Why, "restart") {
		t.Errorf("status of a wake word turned on in the file, audio.backend: file: %+v; want off, waiting for a restart", st.WakeWord)
	}
}

// TestPluginsShowsAConfigThePluginRejected: a running plugin that rejects
// the config a reload gives it keeps its old one; `agenthost plugins` says
// so, naming the setting and the plugin's reason, not just "running".
func TestPluginsShowsAConfigThePluginRejected(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHostWith(t, sim, map[string]any{"services": map[string]any{"builtins": false}},
		fileHostOptions{install: func(dir string) { copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock")) }})
	ready(t, sim, 1)
	f.running(sim, "clock", "get_current_time")
	f.edit(t, map[string]any{"plugins": map[string]any{"config": map[string]any{"clock": map[string]any{"no_such_option": 1}}}})
	f.logShows("rejected its new config")
	out, err := f.cli("plugins")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "plugins.config.clock") || !strings.Contains(out, "no_such_option") {
		t.Errorf("agenthost plugins after the clock rejected its new config says nothing of it:\n%s", out)
	}
}

// TestUnmuteOfAMicrophoneThatIsOnSaysItIsOn: an MCP client's (or the
// server's model's) unmute_microphone while the microphone is on changes
// nothing and says so; it does not claim the microphone was turned off.
func TestUnmuteOfAMicrophoneThatIsOnSaysItIsOn(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	dir := t.TempDir()
	mic := toneFile(t, filepath.Join(dir, "mic.wav"), 1)
	d := startHost(t, sim, "plugins.state_dir="+filepath.Join(dir, "state"), "audio.backend=file", "audio.input_file="+mic)
	ready(t, sim, 1)
	if d.device(t).MicrophoneMuted {
		t.Fatal("the microphone is off at the start")
	}
	res, err := mcpSession(t, d).CallTool(context.Background(), &mcp.CallToolParams{Name: "unmute_microphone", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if text := mcpText(res); res.IsError || strings.Contains(text, "turned off") || !strings.Contains(text, `"microphone_muted":false`) {
		t.Errorf("unmute_microphone from an MCP client while the microphone is on: error %v: %s", res.IsError, text)
	}
	if out := call(t, sim, "unmute_microphone", `{}`); !out.Success || strings.Contains(out.Error, "turned off") {
		t.Errorf("unmute_microphone from the server's model while the microphone is on: %+v", out)
	}
	if d.device(t).MicrophoneMuted {
		t.Error("the microphone is off")
	}
}

// TestCallsTotalCountsEveryCaller: agenthost_calls_total counts the calls
// of the owner's CLI and of MCP clients too, each under its caller label
// beside the voice server's.
func TestCallsTotalCountsEveryCaller(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "metrics.listen=127.0.0.1:0")
	ready(t, sim, 1)
	call(t, sim, "get_current_time", `{}`)
	if out, err := d.cli("call", "get_current_time"); err != nil {
		t.Fatalf("agenthost call get_current_time: %v\n%s", err, out)
	}
	if _, err := mcpSession(t, d).CallTool(context.Background(), &mcp.CallToolParams{Name: "get_current_time", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(d.metricsURL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, caller := range []string{"voice_server", "owner", "mcp"} {
		want := `agenthost_calls_total{caller="` + caller + `",outcome="success",service="get_current_time"} 1`
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// TestATabInTheFileIsNamed: a tab that indents the configuration file is
// named as one by `check` and `run`, not only as a character that cannot
// start a token.
func TestATabInTheFileIsNamed(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agenthost.yaml")
	if err := os.WriteFile(file, []byte("log:\n  level: info\nserver:\n\taddress: 127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	host := testbinHost(t)
	for _, args := range [][]string{{"check", "--offline", "--config", file}, {"run", "--config", file}} {
		out, err := exec.Command(host, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "agenthost.yaml:4:") || !strings.Contains(string(out), "a tab; YAML indents with spaces") {
			t.Errorf("agenthost %s with a tab on line 4: %v\n%s", args[0], err, out)
		}
	}
}
