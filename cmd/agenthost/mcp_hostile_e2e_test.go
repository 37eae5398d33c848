package main

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// MCP servers that misbehave on purpose, against the real host.

// TestMCPHugeResponseFigures: a remote MCP server that answers with a
// 400 MiB JSON body, attempt after attempt (the host retries an HTTP server
// that does not start). The host reads each answer only up to the bound on
// one MCP message; its peak RSS over three attempts is logged and bounded
// (found by attack: ~930 MB, again on each retry).
//
//	go test -run TestMCPHugeResponseFigures -v ./cmd/agenthost/
func TestMCPHugeResponseFigures(t *testing.T) {
	const size = 400 << 20
	srv := mcptest.StartHuge(t, false, size)
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{
		"mcp":     map[string]any{"servers": map[string]any{"huge": map[string]any{"url": srv.URL + "/mcp", "type": "http"}}},
		"plugins": map[string]any{"restart": map[string]any{"base": "50ms", "cap": "200ms"}},
	})
	deadline := time.Now().Add(60 * time.Second)
	for srv.Answered() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the host asked the server %d times in 60 s, want 3", srv.Answered())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m, err := procs.Memory(f.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	perAnswer := float64(srv.Written()) / float64(srv.Answered()) / (1 << 20)
	t.Logf("400 MiB answers: %d asked, %.1f MiB written per answer before the host hung up; host peak RSS %.1f MiB (now %.1f MiB)",
		srv.Answered(), perAnswer, float64(m.Peak)/(1<<20), float64(m.RSS)/(1<<20))
	f.logShows("the bound on one MCP message")
	if m.Peak > 200<<20 {
		t.Errorf("the host's peak RSS is %.0f MiB, over 200 MiB", float64(m.Peak)/(1<<20))
	}
}
