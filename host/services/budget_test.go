package services_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// TestBudgets: callers with a Budget never take the voice server's slots
// (MaxInFlight), are bounded per client and in all, and hold their slots
// until the provider returns.
func TestBudgets(t *testing.T) {
	h := newHolder(t)
	d, _ := setup(t, services.DispatchOptions{MaxInFlight: 2, Timeout: time.Hour}, h)
	b := services.NewBudget(services.BudgetLimits{Name: "MCP clients", ClientName: "MCP session", Max: 3, PerClient: 2,
		MaxSetting: "mcp.serve.max_calls", PerClientSetting: "mcp.serve.max_calls_per_session"})
	from := func(client, id string) <-chan voice.Outcome {
		ch := make(chan voice.Outcome, 1)
		go func() {
			ch <- d.DispatchFrom(context.Background(), voice.Call{CallID: id, Method: "hold", Params: json.RawMessage(`{}`)}, b, client)
		}()
		return ch
	}
	held := []<-chan voice.Outcome{from("a", "a1"), from("a", "a2")}
	<-h.entered
	<-h.entered
	wantError(t, <-from("a", "a3"), "busy: 2 calls of this MCP session in flight (mcp.serve.max_calls_per_session)")
	held = append(held, from("b", "b1"))
	<-h.entered
	wantError(t, <-from("c", "c1"), "busy: 3 calls of MCP clients in flight (mcp.serve.max_calls)")
	// The voice server's two slots are all there.
	held = append(held, dispatchAsync(d, "v1", "hold", `{}`), dispatchAsync(d, "v2", "hold", `{}`))
	<-h.entered
	<-h.entered
	wantError(t, call(d, "v3", "get_current_time", ""), "busy: 2 calls in flight")
	if n := d.InFlight(); n != 5 {
		t.Errorf("InFlight = %d, want 5 (all callers)", n)
	}
	h.let()
	for _, ch := range held {
		if out := <-ch; !out.Success {
			t.Errorf("a held call: %+v", out)
		}
	}
	if out := d.DispatchFrom(context.Background(), voice.Call{Method: "get_current_time"}, b, "c"); !out.Success {
		t.Errorf("after the held calls: %+v", out)
	}
	if n := d.InFlight(); n != 0 {
		t.Errorf("InFlight = %d after all answered", n)
	}
}
