package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// wordy offers one tool with a 2 MB description and 300 with 4 KB ones.
type wordy struct{}

func (wordy) ID() string { return "mcp:wordy" }
func (wordy) Services() []services.Service {
	out := []services.Service{{Name: "huge", Description: strings.Repeat("d", 2_000_000)}}
	for i := range 300 {
		out = append(out, services.Service{Name: fmt.Sprintf("tool_%03d", i), Description: strings.Repeat("t", 4000)})
	}
	return out
}
func (wordy) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"ok"`), nil
}

// TestToolsListHasTheRegisterBounds: MCP clients get the register's
// bounds: descriptions cut to services.max_description, and only the
// services that fit services.max_register.
func TestToolsListHasTheRegisterBounds(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(wordy{}); err != nil {
		t.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{})
	s := mcpserver.New(mcpserver.RegistryCatalog(r), mcpserver.CallerFunc(func(ctx context.Context, svc string, params json.RawMessage) voice.Outcome {
		return d.Dispatch(ctx, voice.Call{Method: svc, Params: params})
	}), mcpserver.Options{Version: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	cs := stdioClient(t, s, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, tool := range res.Tools {
		if len(tool.Description) > services.DefaultMaxDescription {
			t.Errorf("tool %s has a description of %d bytes, over %d", tool.Name, len(tool.Description), services.DefaultMaxDescription)
		}
		b, _ := json.Marshal(tool)
		size += len(b)
	}
	t.Logf("tools/list: %d of 301 tools, %d bytes", len(res.Tools), size)
	if len(res.Tools) != len(r.Entries()) || len(res.Tools) == 301 {
		t.Errorf("tools/list has %d tools, the registry %d: want the same, not all 301", len(res.Tools), len(r.Entries()))
	}
	if size > services.DefaultMaxRegister+64*len(res.Tools) {
		t.Errorf("tools/list of %d bytes, over the register's bound %d (and field names)", size, services.DefaultMaxRegister)
	}
}
