package services_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// TestAHungProviderLeavesTheOthersAnswering: the voice server starts 80
// calls to a provider that never answers (more than the 64 of
// services.max_in_flight): that provider gets its share, 16 by default, and
// its further calls are busy, naming it and the setting; the built-ins and
// another provider answer meanwhile (issue 23 item 19: every service was
// "busy: 64 calls in flight" until the hung calls timed out).
func TestAHungProviderLeavesTheOthersAnswering(t *testing.T) {
	h := newHolder(t)
	d, _ := setup(t, services.DispatchOptions{Timeout: time.Hour}, h)
	entered := 0
	var busy []string
	for i := range 80 {
		ch := dispatchAsync(d, "", "hold", `{}`)
		select {
		case <-h.entered:
			entered++
		case out := <-ch:
			if out.Success {
				t.Fatalf("call %d to the hung provider answered: %+v", i, out)
			}
			busy = append(busy, out.Error)
		}
	}
	if entered != 16 {
		t.Errorf("%d calls reached the hung provider, want 16 (its share of the 64)", entered)
	}
	if want := "busy: 16 calls to plugin:hold in flight (services.max_in_flight_per_provider)"; len(busy) == 0 || busy[0] != want {
		t.Errorf("the hung provider's further calls: %q, want %q", busy[:min(len(busy), 1)], want)
	}
	if out := call(d, "", "get_current_time", ""); !out.Success || !strings.Contains(string(out.Data), "2025") {
		t.Errorf("the built-in beside a hung provider: %+v", out)
	}
	if out := call(d, "", "tool", `{"filename":"a"}`); !out.Success {
		t.Errorf("another provider beside a hung one: %+v", out)
	}
}

// TestABudgetBoundsItsCallsToOneProvider: a caller with a Budget (MCP
// clients, the control socket) gets at most PerProvider calls running on one
// provider; the others answer it meanwhile.
func TestABudgetBoundsItsCallsToOneProvider(t *testing.T) {
	h := newHolder(t)
	d, _ := setup(t, services.DispatchOptions{Timeout: time.Hour}, h)
	b := services.NewBudget(services.BudgetLimits{Name: "MCP clients", ClientName: "MCP session", Max: 8, PerProvider: 2,
		MaxSetting: "mcp.serve.max_calls", PerProviderSetting: "services.max_in_flight_per_provider"})
	from := func(client, method, params string) <-chan voice.Outcome {
		ch := make(chan voice.Outcome, 1)
		go func() {
			ch <- d.DispatchFrom(context.Background(), voice.Call{Method: method, Params: json.RawMessage(params)}, b, client)
		}()
		return ch
	}
	held := []<-chan voice.Outcome{from("a", "hold", `{}`), from("b", "hold", `{}`)}
	<-h.entered
	<-h.entered
	wantError(t, <-from("c", "hold", `{}`), "busy: 2 calls of MCP clients to plugin:hold in flight (services.max_in_flight_per_provider)")
	if out := <-from("c", "get_current_time", `{}`); !out.Success {
		t.Errorf("the built-in beside a provider at its bound: %+v", out)
	}
	// The voice server's share of the provider is its own.
	v := dispatchAsync(d, "v1", "hold", `{}`)
	<-h.entered
	h.let()
	for _, ch := range append(held, v) {
		if out := <-ch; !out.Success {
			t.Errorf("a held call: %+v", out)
		}
	}
	if out := <-from("c", "hold", `{}`); !out.Success {
		t.Errorf("after the held calls: %+v", out)
	}
}
