package mcpclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/backoff"
)

// supervised runs an MCP server under the host's supervisor, as the host
// will, and returns the registry it feeds.
func supervised(t *testing.T, o mcpclient.Options, failed supervise.FailedStart) (*supervise.Supervisor, *services.Registry) {
	t.Helper()
	o.Name = "toy"
	starter, err := mcpclient.NewStarter(o)
	if err != nil {
		t.Fatal(err)
	}
	r := services.NewRegistry(services.RegistryOptions{})
	sup := supervise.New(supervise.Options{
		ID: mcpclient.ProviderID("toy"), Kind: "MCP server", Name: "toy", Registry: r, Log: o.Log,
		StartTimeout: 20 * time.Second, StopGrace: time.Second, Restart: backoff.Backoff{Base: 20 * time.Millisecond, Cap: 200 * time.Millisecond},
		MaxCrashes: 5, CrashWindow: time.Minute, FailedStart: failed, HealthInterval: 100 * time.Millisecond,
	})
	t.Cleanup(sup.Stop)
	sup.Load(starter, nil)
	<-sup.Settled()
	return sup, r
}

func registered(r *services.Registry, name string) bool {
	_, ok := r.Lookup(name)
	return ok
}

// TestSupervisedRestart: a stdio server killed from outside is restarted
// by the supervisor and serves again.
func TestSupervisedRestart(t *testing.T) {
	log, logs := newLog()
	sup, r := supervised(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}, Log: log}, supervise.Crash)
	if !registered(r, "add") {
		t.Fatalf("registered: %v", r.Names())
	}
	pid := sup.Status().Info.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restart", func() bool { return registered(r, "add") && sup.Status().Info.PID != pid && sup.Status().Info.PID != 0 })
	if st := sup.Status(); st.Restarts != 1 || st.State != supervise.StateRunning {
		t.Errorf("status %+v, want running after one restart", st)
	}
	ctx, cancelCall := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelCall()
	if data, err := sup.Call(ctx, "add", json.RawMessage(`{"a":1,"b":1}`)); err != nil || string(data) != `"2"` {
		t.Errorf("add after the restart: %s, %v", data, err)
	}
	// The crash is logged whichever notices it first: the session's end or,
	// on a slow machine, the health check's ping.
	wantLog(t, logs, "MCP server crashed; restarting it")
}

// TestSupervisedListChanged: a tools change reaches the registry.
func TestSupervisedListChanged(t *testing.T) {
	sup, r := supervised(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}}, supervise.Crash)
	changes, cancel := r.Subscribe()
	defer cancel()
	ctx, cancelCall := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelCall()
	if _, err := sup.Call(ctx, "add_tool", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	<-changes
	eventually(t, "extra in the registry", func() bool { return registered(r, "extra") })
}

// TestSupervisedHTTPDown: an HTTP server that goes down leaves the
// registry (found by the health check) and comes back when it is up again.
func TestSupervisedHTTPDown(t *testing.T) {
	srv := mcptest.StartEverything(t, "streamableHttp")
	log, logs := newLog()
	sup, r := supervised(t, mcpclient.Options{Server: mcpclient.ServerConfig{URL: srv.URL("/mcp")}, Log: log}, supervise.Retry)
	if !registered(r, "get-sum") {
		t.Fatalf("registered: %v", r.Names())
	}
	srv.Stop()
	eventually(t, "the services to leave", func() bool { return !registered(r, "get-sum") })
	mcptest.StartEverythingOn(t, "streamableHttp", srv.Port)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("status %+v\n%s", sup.Status(), logs)
		}
	})
	eventually(t, "the services to come back", func() bool { return registered(r, "get-sum") })
	if !strings.Contains(logs.String(), "health check") && !strings.Contains(logs.String(), "connection ended") {
		t.Errorf("no log line says the server went away:\n%s", logs)
	}
	if st := sup.Status(); st.State != supervise.StateRunning {
		t.Errorf("status %+v", st)
	}
}
