package mcpclient_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/host/supervise"
)

// The reference server @modelcontextprotocol/server-everything, installed
// by scripts/install-mcp-test-deps.sh, in each of its transports.

func everything(t *testing.T, transport string) (mcpclient.ServerConfig, *mcptest.Server) {
	switch transport {
	case "stdio":
		return mcpclient.ServerConfig{Command: mcptest.Bin(t, "mcp-server-everything"), Args: []string{"stdio"}}, nil
	case "sse":
		srv := mcptest.StartEverything(t, "sse")
		return mcpclient.ServerConfig{URL: srv.URL("/sse")}, srv // no type: found by the fallback
	default:
		srv := mcptest.StartEverything(t, "streamableHttp")
		return mcpclient.ServerConfig{URL: srv.URL("/mcp"), Headers: map[string]string{"X-Test": "1"}}, srv
	}
}

func TestEverything(t *testing.T) {
	for _, transport := range []string{"stdio", "sse", "streamable-http"} {
		t.Run(transport, func(t *testing.T) {
			cfg, _ := everything(t, transport)
			log, logs := newLog()
			s := start(t, mcpclient.Options{Name: "everything", Server: cfg, Log: log})
			if got := s.Info().Transport; got != transport {
				t.Errorf("transport %q, want %q", got, transport)
			}
			if transport == "sse" {
				wantLog(t, logs, "does not speak Streamable HTTP; using the legacy SSE transport", "mcp=everything")
			}
			n := names(s)
			for _, want := range []string{"echo", "get-sum", "get-structured-content", "get-env", "get-tiny-image"} {
				if !strings.Contains(","+n+",", ","+want+",") {
					t.Errorf("services %s lack %s", n, want)
				}
			}
			for _, sv := range s.Services() {
				if sv.Name == "get-sum" && string(sv.Parameters) != `{"properties":{"a":{"description":"First number","type":"number"},"b":{"description":"Second number","type":"number"}},"required":["a","b"],"type":"object"}` {
					t.Errorf("get-sum's parameters %s", sv.Parameters)
				}
			}
			// numeric arguments
			if got, err := call(t, s, "get-sum", `{"a":2,"b":3.5}`); err != nil || !strings.Contains(got, "5.5") {
				t.Errorf("get-sum = %s, %v", got, err)
			}
			// an error from the server (its own validation)
			if _, err := call(t, s, "get-sum", `{"a":"two","b":3}`); err == nil || errors.Is(err, supervise.ErrGone) || !strings.Contains(strings.ToLower(err.Error()), "invalid") {
				t.Errorf("get-sum with a string: %v, want the server's error", err)
			}
			// structured content
			got, err := call(t, s, "get-structured-content", `{"location":"Chicago"}`)
			var weather map[string]any
			if err != nil || json.Unmarshal([]byte(got), &weather) != nil || weather["temperature"] == nil {
				t.Errorf("get-structured-content = %s, %v; want the structured content", got, err)
			}
			// images are named, not inlined
			if got, err := call(t, s, "get-tiny-image", `{}`); err != nil || !strings.Contains(got, "[image (image/png)") {
				t.Errorf("get-tiny-image = %s, %v", got, err)
			}
			st := s.Status()
			if len(st.Prompts) == 0 || len(st.Resources) == 0 || st.ServerName == "" {
				t.Errorf("status lacks prompts, resources or the server's name: %+v", st)
			}
			var simple bool
			for _, p := range st.Prompts {
				simple = simple || p.Name == "simple-prompt"
			}
			if !simple {
				t.Errorf("prompts %+v lack simple-prompt", st.Prompts)
			}
			// server-everything registers tools that depend on the client's
			// capabilities once initialized, and says tools/list_changed: the
			// list taken after it is the same, so nothing is signalled.
			eventually(t, "the list after the server's list_changed", func() bool {
				st := s.Status()
				return st.ListChanged > 0 && st.Relisted > 0
			})
			select {
			case <-s.Changed():
				t.Error("Changed signalled although the tools stayed the same")
			default:
			}
			// get-roots-list is offered only to clients with roots.
			if strings.Contains(n, "get-roots-list") {
				t.Errorf("get-roots-list is offered although no roots were announced")
			}
		})
	}
}

// TestEverythingRoots: the configured roots, and only they, answer roots/list.
func TestEverythingRoots(t *testing.T) {
	cfg, _ := everything(t, "stdio")
	cfg.Roots = []string{"/srv/music", "file:///home/pi/notes"}
	s := start(t, mcpclient.Options{Name: "everything", Server: cfg})
	got, err := call(t, s, "get-roots-list", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"file:///srv/music", "file:///home/pi/notes"} {
		if !strings.Contains(got, want) {
			t.Errorf("roots %s lack %s", got, want)
		}
	}
	if strings.Count(got, "file://") != 2 {
		t.Errorf("roots %s: want exactly the two configured", got)
	}
}

// TestEverythingDown: an HTTP server that goes away ends the session (by
// the failed call or the pings), and the call says the provider is gone.
func TestEverythingDown(t *testing.T) {
	cfg, srv := everything(t, "streamable-http")
	log, logs := newLog()
	s := start(t, mcpclient.Options{Name: "everything", Server: cfg, Log: log, PingInterval: 100 * time.Millisecond})
	srv.Stop()
	<-s.Done()
	if _, err := call(t, s, "echo", `{"message":"hi"}`); !errors.Is(err, supervise.ErrGone) {
		t.Errorf("call to a server that is down: %v, want ErrGone", err)
	}
	wantLog(t, logs, "mcp server connection ended", "mcp=everything")
}

// TestEverythingNotThere: an address where nothing listens fails the start
// with the address in the error.
func TestEverythingNotThere(t *testing.T) {
	port := mcptest.FreePort(t)
	log, logs := newLog()
	url := "http://127.0.0.1:" + itoa(port) + "/mcp?key=secret"
	_, err := startErr(t, mcpclient.Options{Name: "gone", Server: mcpclient.ServerConfig{URL: url, Headers: map[string]string{"Authorization": "Bearer hunter2"}}, Log: log}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:"+itoa(port)) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(logs.String(), "secret") || strings.Contains(logs.String(), "hunter2") {
		t.Errorf("a secret reached the error or the log:\n%v\n%s", err, logs)
	}
	wantLog(t, logs, "mcp server did not start", "mcp=gone")
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
