package services_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// BenchmarkDispatchBuiltin measures one get_current_time call through the
// whole path: lookup, validation, a goroutine under a deadline, the answer.
func BenchmarkDispatchBuiltin(b *testing.B) {
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(builtin.New(func() time.Time { return fixed })); err != nil {
		b.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{})
	c := voice.Call{CallID: "bench", Method: "get_current_time", Params: json.RawMessage(`{"format":"simple"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out := d.Dispatch(ctx, c); !out.Success {
			b.Fatal(out.Error)
		}
	}
}
