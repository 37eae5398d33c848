package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// refusedLog is the start of the WARN the daemon logs for a process it
// started that tried the control socket.
const refusedLog = "the control socket refused a process started by agenthost"

// TestChildrenCannotActAsTheOwner (issue 41, item 1): the owner mutes the
// microphone; then the model calls an ordinary tool of a configured MCP
// stdio server, and a service of a plugin, each of which posts "mic on" and
// "talk start" to the control socket, itself and from a grandchild that
// double-forked under setsid and whose parent exited (adopted by the
// daemon). Every attempt is refused with 403 and logged; the microphone
// stays off and no AUDIO frame reaches the server. The owner's own
// `agenthost mic on` (from this test, not a descendant of the daemon)
// still turns it on.
func TestChildrenCannotActAsTheOwner(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{VADHang: time.Hour})
	attacker := testPlugin(t, "attacker", "")
	mic := toneFile(t, filepath.Join(t.TempDir(), "mic.wav"), 1)
	f := startFileHostWith(t, sim, map[string]any{
		"audio":  map[string]any{"backend": "file", "input_file": mic},
		"server": map[string]any{"params": map[string]any{"mode": "vad"}},
		"mcp":    map[string]any{"servers": map[string]any{"evil": map[string]any{"command": attacker, "args": []any{"-mcp"}}}},
	}, fileHostOptions{install: func(dir string) { copyExec(t, attacker, filepath.Join(dir, "attacker")) }})
	sock := filepath.Join(f.dir, "run", "control.sock")
	waitFor(t, sim, "the plugin's service and the MCP server's tool", func() bool {
		s := sim.Services()
		_, plugin := s["attacker_unmute"]
		_, server := s["mcp_unmute"]
		return plugin && server
	})
	waitFor(t, sim, "audio from the microphone", func() bool { return audioFrames(sim) >= 5 })
	if out, err := f.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v %s", err, out)
	}
	f.waitWithheld(t, 20)
	n := audioFrames(sim)
	host := f.cmd.Process.Pid

	for _, a := range []struct {
		who, service string
		grandchild   bool
	}{
		{"the MCP server", "mcp_unmute", false},
		{"the MCP server's orphaned grandchild", "mcp_unmute", true},
		{"the plugin", "attacker_unmute", false},
		{"the plugin's orphaned grandchild", "attacker_unmute", true},
	} {
		out := call(t, sim, a.service, fmt.Sprintf(`{"socket":%q,"grandchild":%v}`, sock, a.grandchild))
		report := reportOf(out)
		if !out.Success || report == "" {
			t.Fatalf("%s: %+v", a.who, out)
		}
		for _, path := range []string{"/v1/device/mic", "/v1/talk"} {
			if !strings.Contains(report, path+": 403 ") || !strings.Contains(report, "may not use it") {
				t.Errorf("%s posted to %s and was not refused with 403:\n%s", a.who, path, report)
			}
		}
		if a.grandchild {
			var pid, ppid, sid int
			if _, err := fmt.Sscanf(report, "grandchild pid=%d ppid=%d sid=%d", &pid, &ppid, &sid); err != nil {
				t.Fatalf("%s's report: %v\n%s", a.who, err, report)
			}
			if sid != pid || ppid != host {
				t.Errorf("%s: pid %d, parent %d, session %d: want its own session and the daemon (%d) for parent", a.who, pid, ppid, sid, host)
			}
			f.logLine("level=WARN", refusedLog, fmt.Sprintf("pid=%d", pid))
		}
	}
	f.waitLogCount(4, "level=WARN", refusedLog)
	if f.device(t).MicrophoneMuted == false {
		t.Fatal("a process the daemon started turned the microphone on")
	}
	f.waitWithheld(t, 50)
	if m := audioFrames(sim); m != n {
		t.Fatalf("%d AUDIO frames reached the server after processes the daemon started tried the control socket", m-n)
	}

	// The owner, whom the daemon did not start, still may.
	if out, err := f.cli("mic", "on"); err != nil || !strings.Contains(out, "microphone on") {
		t.Fatalf("the owner's agenthost mic on: %v %s", err, out)
	}
	waitFor(t, sim, "audio once the owner turned the microphone on", func() bool { return audioFrames(sim) >= n+5 })
	if c := f.logCount(refusedLog); c > 4*2 {
		t.Errorf("%d refusals logged, more than the attempts made", c)
	}
}

// reportOf returns the text a service answered: a plugin's {"report": …},
// an MCP tool's text, or the raw data.
func reportOf(out voice.Outcome) string {
	var r struct{ Report string }
	if json.Unmarshal(out.Data, &r) == nil && r.Report != "" {
		return r.Report
	}
	var s string
	if json.Unmarshal(out.Data, &s) == nil {
		return s
	}
	return string(out.Data)
}
