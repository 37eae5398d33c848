package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
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

// TestMCPListChangedLoopFigures: a stdio server that says
// tools/list_changed after every tools/list, its list unchanged (relist) or
// changing each time (relist-changing), against the real host. Registers
// to the voice server come at most once per services.MinChangeInterval
// (none for an unchanged list), re-lists at most once per
// mcpclient.MinRelistInterval; registers and re-lists a second and the
// host's CPU are logged. Once the list stops changing, the last register
// carries the final list (found by attack: 3,271 registers in 13 s; ~500
// re-lists a second, a full core, for an unchanged list).
//
//	go test -run TestMCPListChangedLoopFigures -v ./cmd/agenthost/
func TestMCPListChangedLoopFigures(t *testing.T) {
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	for _, mode := range []string{"relist", "relist-changing"} {
		t.Run(mode, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{})
			f := startFileHost(t, sim, map[string]any{"mcp": map[string]any{"servers": map[string]any{
				"looper": map[string]any{"command": toy, "args": []any{"-mode", mode}}}}})
			waitFor(t, sim, "the looper's tools", func() bool { _, ok := sim.Services()["looper"]; return ok })
			relisted := func() int {
				if st := f.status(t); len(st.MCP) == 1 && st.MCP[0].Session != nil {
					return st.MCP[0].Session.Relisted
				}
				return 0
			}
			pid := f.cmd.Process.Pid
			// The window holds both readings whole: a status call slow to
			// return (a busy machine) widens it rather than leaving the
			// host's count outside it.
			t0 := time.Now()
			g0, l0, c0 := len(sim.Registers()), relisted(), cpuSeconds(t, pid)
			time.Sleep(3 * time.Second) // a window to count in, not a wait for an event
			g1, l1, c1 := len(sim.Registers()), relisted(), cpuSeconds(t, pid)
			elapsed := time.Since(t0)
			secs := elapsed.Seconds()
			t.Logf("%s: %.1f registers a second, %.1f re-lists a second, host CPU %.0f%% of one core (%d registers, %d re-lists in %v)",
				mode, float64(g1-g0)/secs, float64(l1-l0)/secs, 100*(c1-c0)/secs, g1-g0, l1-l0, elapsed.Round(time.Millisecond))
			if most := int(elapsed/services.MinChangeInterval) + 2; g1-g0 > most {
				t.Errorf("%d registers in %v, over %d (one per %v)", g1-g0, elapsed, most, services.MinChangeInterval)
			}
			if most := int(elapsed/mcpclient.MinRelistInterval) + 2; l1-l0 > most {
				t.Errorf("%d re-lists in %v, over %d (one per %v)", l1-l0, elapsed, most, mcpclient.MinRelistInterval)
			}
			if mode == "relist" {
				if g1 != g0 {
					t.Errorf("%d registers for a list that never changed", g1-g0)
				}
				return
			}
			out := call(t, sim, "freeze", `{}`)
			var final string
			if !out.Success || json.Unmarshal(out.Data, &final) != nil || !strings.HasPrefix(final, "version ") {
				t.Fatalf("freeze: %+v", out)
			}
			waitFor(t, sim, "the register of the final list ("+final+")", func() bool { return sim.Services()["looper"].Description == final })
		})
	}
}
