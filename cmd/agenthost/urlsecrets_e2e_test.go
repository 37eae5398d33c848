package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestServerURLSecretsStayOutOfTheLog: the password, query values and
// fragment of an MCP server's URL reach no line of the daemon's log, for a
// server that answers and one that cannot be reached, at debug level, nor
// `agenthost status`; the query's keys and the host stay, to say which
// server a line is about (found by
// attack: a URL's #fragment was in 10 lines of the log, though `check`
// masked it).
func TestServerURLSecretsStayOutOfTheLog(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "urls", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	live := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(live.Close) // after the host's end (cleanups run last first): Close waits for its connections
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now

	secrets := []string{"l1vepassw0rd", "l1vequerytok", "l1vefragm3nt", "d3adpassw0rd", "d3adquerytok", "d3adfragm3nt"}
	liveURL := fmt.Sprintf("http://user:l1vepassw0rd@%s/mcp?token=l1vequerytok#l1vefragm3nt", strings.TrimPrefix(live.URL, "http://"))
	deadURL := fmt.Sprintf("http://user:d3adpassw0rd@%s/mcp?key=d3adquerytok#d3adfragm3nt", dead)
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{
		"log": map[string]any{"level": "debug"},
		"mcp": map[string]any{"servers": map[string]any{
			"live": map[string]any{"url": liveURL, "type": "http"},
			"dead": map[string]any{"url": deadURL, "type": "http"},
		}},
		"plugins": map[string]any{"restart": map[string]any{"base": "50ms", "cap": "200ms"}},
	})
	waitFor(t, sim, "the live server's tool", func() bool { _, ok := sim.Services()["ping"]; return ok })
	f.logShows("mcp=dead") // a line about the server that cannot be reached
	status, err := f.cli("status")
	if err != nil {
		t.Fatalf("agenthost status: %v\n%s", err, status)
	}
	for _, s := range secrets {
		if strings.Contains(status, s) {
			t.Errorf("agenthost status shows the URL's secret %q:\n%s", s, status)
		}
	}
	if !strings.Contains(status, "token=") {
		t.Errorf("agenthost status no longer shows the live server's URL with its query keys:\n%s", status)
	}
	if err := f.stop(); err != nil {
		t.Logf("the host's exit: %v", err)
	}
	var leaks []string
	for _, l := range strings.Split(f.log.String(), "\n") {
		for _, s := range secrets {
			if strings.Contains(l, s) {
				leaks = append(leaks, l)
				break
			}
		}
	}
	if len(leaks) > 0 {
		t.Errorf("%d log lines show a URL's secret:\n%s", len(leaks), strings.Join(leaks, "\n"))
	}
}
