package host

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// heldProvider offers "hold", whose calls last until release is closed,
// and "quick", which answers at once.
type heldProvider struct{ release chan struct{} }

func (heldProvider) ID() string { return "test:held" }

func (heldProvider) Services() []services.Service {
	return []services.Service{{Name: "hold", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "quick", Description: "answers", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (p heldProvider) Call(ctx context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method == "hold" {
		select {
		case <-p.release:
		case <-ctx.Done():
		}
	}
	return json.RawMessage(`{"ok":true}`), nil
}

// TestAReloadOfThePerProviderBoundReachesTheMCPEndpoint:
// services.max_in_flight_per_provider is applied by a reload (the host
// names it applied), and it bounds the calls of the MCP endpoint's clients
// to one provider as well: after a reload from 1 to 2, a second call to a
// provider that holds one must run, not be refused as busy.
func TestAReloadOfThePerProviderBoundReachesTheMCPEndpoint(t *testing.T) {
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = filepath.Join(dir, "run"), filepath.Join(dir, "state")
	cfg.Audio.Backend = "none"
	cfg.MCP.Serve.Listen = "127.0.0.1:0"
	cfg.Services.MaxInFlightPerProvider = 1
	logs := &testbin.Buffer{}
	h, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)), Options{MCP: &mcpserver.HTTPOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	p := heldProvider{release: make(chan struct{})}
	if err := h.Registry().Put(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s never came", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ready := regexp.MustCompile(`url=(http://\S+/mcp)`)
	wait("the MCP endpoint", func() bool { return ready.MatchString(logs.String()) })
	url := ready.FindStringSubmatch(logs.String())[1]

	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	post := func(session, body string) (*http.Response, error) {
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		return c.Do(req)
	}
	resp, err := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	if resp, err = post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	held, holding := make(chan string, 1), false
	defer func() { // the held call, then the session, end before the host
		close(p.release)
		if holding {
			<-held
		}
		if req, err := http.NewRequest("DELETE", url, nil); err == nil {
			req.Header.Set("Mcp-Session-Id", session)
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	call := func(id, name string) string {
		resp, err := post(session, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	holding = true
	go func() { held <- call("2", "hold") }()
	wait("the held call", func() bool { return h.calls.Dispatcher().InFlight() == 1 })
	next := *cfg
	next.Services.MaxInFlightPerProvider = 2
	if later := h.Apply(&next); len(later) != 0 {
		t.Fatalf("the reload asks a restart for %v", later)
	}
	if out := call("3", "quick"); strings.Contains(out, "busy") || !strings.Contains(out, `ok`) {
		t.Errorf("after a reload of services.max_in_flight_per_provider from 1 to 2, a second MCP call to a provider that holds one: %s", out)
	}
}
