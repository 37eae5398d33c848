package main

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestMetrics: /metrics on metrics.listen names the link, the calls by
// service and outcome, the plugins and the audio, to no other Host than
// loopback's; promtool (Debian's
// prometheus package, unpacked by scripts/install-promtool.sh) accepts it.
func TestMetrics(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock")) },
		"metrics.listen=127.0.0.1:0")
	pluginsReady(t, sim)
	url := regexp.MustCompile(`url=(http://\S+/metrics)`).FindStringSubmatch(d.logLine("metrics served"))[1]
	call(t, sim, "get_current_time", `{}`)
	call(t, sim, "get_current_time", `{"format":"weekly"}`) // invalid: an error outcome
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"agenthost_link_up 1",
		"agenthost_link_connections_total 1",
		`agenthost_calls_total{caller="voice_server",outcome="success",service="get_current_time"} 1`,
		`agenthost_calls_total{caller="voice_server",outcome="error",service="get_current_time"} 1`,
		`agenthost_call_duration_seconds_count{service="get_current_time"} 2`,
		`agenthost_plugin_state{plugin="clock",state="running"} 1`,
		`agenthost_plugin_restarts_total{plugin="clock"} 0`,
		"agenthost_audio_frames_sent_total 0",
		"agenthost_registers_sent_total 1",
		"agenthost_volume 70", "agenthost_speaker_muted 0", "agenthost_microphone_muted 0", "agenthost_timers_pending 0",
		"agenthost_timers_ringing 0", "agenthost_microphone_frames_withheld_total 0",
		`agenthost_mixer_streams{class="media"} 0`, "agenthost_mixer_ducks_total 0", "agenthost_mixer_active 0",
		`agenthost_mixer_played_seconds_total{class="voice"} 0`, `agenthost_media_streams_started_total{class="media"} 0`,
		`agenthost_media_held_total{how="ducked"} 0`, `agenthost_media_held_total{how="paused"} 0`,
		"agenthost_build_info{",
		"go_goroutines",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A page from another name (DNS rebinding) is refused, as on /mcp.
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = "evil.example"
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("/metrics with Host: evil.example: %s, want 403", resp.Status)
		}
	}
	out, err := exec.Command(filepath.Join(testbin.ModuleRoot(t), "scripts", "install-promtool.sh")).Output()
	if err != nil {
		t.Fatalf("install-promtool.sh: %v", err)
	}
	check := exec.Command(strings.TrimSpace(string(out)), "check", "metrics")
	check.Stdin = strings.NewReader(text)
	if b, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, b)
	}
}

// TestMetricsWarnsBeyondLoopback: metrics.listen on every interface
// (":PORT") is served but warned about, as the MCP endpoint is; on
// loopback it is not.
func TestMetricsWarnsBeyondLoopback(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "metrics.listen=:0")
	ready(t, sim, 1)
	d.logLine("level=WARN", "metrics", "beyond this machine", "metrics.listen")
	local := startHost(t, sim, "metrics.listen=127.0.0.1:0")
	local.logLine("metrics served")
	if strings.Contains(local.log.String(), "beyond this machine") {
		t.Errorf("metrics on loopback drew the warning:\n%s", local.log)
	}
}

// TestListenersBeyondLoopbackAnswerOnlyTheirOwnNames: /metrics and /mcp on
// every interface (dialled through 127.0.0.1 here: the machine's own
// interfaces are not used) refuse a request naming another host, as a
// DNS-rebinding page of the network would send, and answer a name the
// owner gave them (metrics.hosts, mcp.serve.hosts).
func TestListenersBeyondLoopbackAnswerOnlyTheirOwnNames(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "metrics.listen=0.0.0.0:0", "metrics.hosts=speaker.lan", "mcp.serve.listen=0.0.0.0:0",
		"mcp.serve.hosts=speaker.lan", "mcp.serve.token=e2e-mcp-token")
	ready(t, sim, 1)
	viaLoopback := func(url string) string {
		port := regexp.MustCompile(`:(\d+)/`).FindStringSubmatch(url)[1]
		return regexp.MustCompile(`//[^/]+/`).ReplaceAllString(url, "//127.0.0.1:"+port+"/")
	}
	metricsURL := viaLoopback(d.metricsURL())
	mcpURL, _ := d.mcpURL()
	mcpURL = viaLoopback(mcpURL)
	ask := func(method, url, host string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Host = host
		req.Header.Set("Authorization", "Bearer e2e-mcp-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			t.Logf("%s %s with Host %s: %s", method, url, host, b)
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, url, host string
		refused           bool
	}{
		{"GET", metricsURL, "evil.example:9100", true},
		{"GET", metricsURL, "speaker.lan:9100", false},
		{"GET", metricsURL, "127.0.0.1", false},
		{"POST", mcpURL, "evil.example:8765", true},
		{"POST", mcpURL, "speaker.lan:8765", false},
	} {
		if got := ask(tc.method, tc.url, tc.host); (got == http.StatusForbidden) != tc.refused {
			t.Errorf("%s %s with Host %s: %d, refused want %v", tc.method, tc.url, tc.host, got, tc.refused)
		}
	}
}
