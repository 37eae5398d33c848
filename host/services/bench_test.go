package services_test

import (
	"context"
	"encoding/json"
	"strings"
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

// BenchmarkAMebibyteOfExponents measures the validation of the costliest
// params a call may carry: a mebibyte of the largest exponents allowed,
// in an array of integers (each is computed as a big number).
func BenchmarkAMebibyteOfExponents(b *testing.B) {
	p := &fake{id: "plugin:ints", svcs: []services.Service{svc("ints", `{"type":"object","properties":{"v":{"type":"array","items":{"type":"integer"}}}}`)}}
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(p); err != nil {
		b.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{Timeout: time.Hour})
	n := strings.Repeat("9", services.MaxNumberLength-5) + "e999"
	params := `{"v":[` + strings.TrimSuffix(strings.Repeat(n+",", (1<<20-16)/(len(n)+1)), ",") + `]}`
	c := voice.Call{CallID: "bench", Method: "ints", Params: json.RawMessage(params)}
	for b.Loop() {
		d.Dispatch(context.Background(), c)
	}
}

// honoring is a provider that honours its context and answers at once, as
// a plugin's supervisor does: the dispatcher calls it on the caller's
// goroutine.
type honoring struct{ fake }

func (*honoring) HonorsContext() bool { return true }

// BenchmarkDispatchPlugin measures the dispatcher's own work for a call to
// a provider that honours its context (a plugin): the lookup, the params
// (validated once), the slot, the deadline and the answer; the provider
// itself does nothing. Its allocations are the dispatcher's per call.
func BenchmarkDispatchPlugin(b *testing.B) {
	p := &honoring{fake{id: "plugin:clock", svcs: []services.Service{svc("get_current_time",
		`{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"]}}}`)},
		call: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"Thursday, 12:00"`), nil
		}}}
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(p); err != nil {
		b.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{})
	c := voice.Call{CallID: "bench", Method: "get_current_time", Params: json.RawMessage(`{"format":"simple"}`)}
	ctx := services.WithCaller(context.Background(), services.CallerVoiceServer)
	b.ReportAllocs()
	for b.Loop() {
		if out := d.Dispatch(ctx, c); !out.Success {
			b.Fatal(out.Error)
		}
	}
}
