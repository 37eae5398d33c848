package calls

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// nullLink is up on connection 1 and drops what is sent.
type nullLink struct{}

func (nullLink) Send(voice.Frame) error { return nil }
func (nullLink) Up() (bool, int)        { return true, 1 }

// quick answers at once and honours its context, as a plugin does.
type quick struct{}

func (quick) ID() string { return "plugin:quick" }
func (quick) Services() []services.Service {
	return []services.Service{{Name: "quick_time", Description: "the time"}}
}
func (quick) HonorsContext() bool { return true }
func (quick) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"12:00"`), nil
}

// TestAnsweringACallAllocatesNothingOfItsOwn: beside the dispatch and the
// answer, handling a voice server's call allocates nothing with the log
// at info (its debug line is not built).
func TestAnsweringACallAllocatesNothingOfItsOwn(t *testing.T) {
	cfg := config.Default()
	cfg.Services.Builtins = false
	c, err := New(cfg, slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelInfo})),
		func(*config.Config) (map[string]string, []string) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	c.SetLink(nullLink{})
	if err := c.Registry().Put(quick{}); err != nil {
		t.Fatal(err)
	}
	call := voice.Call{CallID: "c1", Method: "quick_time", Params: json.RawMessage(`{}`)}
	handled := testing.AllocsPerRun(200, func() {
		c.calls.Add(1)
		c.handleCall(1, call)
	})
	parts := testing.AllocsPerRun(200, func() {
		out := c.disp.Dispatch(c.voiceCtx, call)
		c.calls.Add(1)
		c.answer(1, call, out)
	})
	if handled != parts {
		t.Fatalf("handling a call: %v allocations, the dispatch and the answer: %v", handled, parts)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
