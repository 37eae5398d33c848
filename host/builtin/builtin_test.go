package builtin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/timefmt"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var fixed = time.Date(2025, 1, 22, 14, 30, 25, 0, time.FixedZone("CET", 3600))

func TestProvider(t *testing.T) {
	p := builtin.New(func() time.Time { return fixed })
	if p.ID() != "builtin" {
		t.Errorf("ID = %q", p.ID())
	}
	if f, ok := p.(services.FallbackProvider); !ok || !f.Fallback() {
		t.Error("the built-ins must be a fallback provider")
	}
	svcs := p.Services()
	if len(svcs) != 1 || svcs[0].Name != "get_current_time" || svcs[0].Description != "Retrieve current date and time" {
		t.Fatalf("Services = %+v", svcs)
	}
	// The schema is the seeds' one.
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string   `json:"type"`
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(svcs[0].Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	f := schema.Properties["format"]
	if schema.Type != "object" || f.Type != "string" || strings.Join(f.Enum, ",") != "simple,detailed" ||
		f.Description != "simple = short, detailed = full info" {
		t.Errorf("schema = %s", svcs[0].Parameters)
	}
}

func TestGetCurrentTime(t *testing.T) {
	p := builtin.New(func() time.Time { return fixed })
	cases := []struct{ params, want string }{
		{``, "2025-01-22 14:30:25"},
		{`{}`, "2025-01-22 14:30:25"},
		{`{"format":"simple"}`, "2025-01-22 14:30:25"},
		{`{"format":"detailed"}`, "Wednesday, 22 January 2025, 14:30:25 CET (UTC+01:00), ISO week 4"},
	}
	for _, c := range cases {
		data, err := p.Call(context.Background(), "get_current_time", json.RawMessage(c.params))
		if err != nil {
			t.Errorf("%s: %v", c.params, err)
			continue
		}
		var s string
		if err := json.Unmarshal(data, &s); err != nil || s != c.want {
			t.Errorf("%s: data %s, want %q", c.params, data, c.want)
		}
	}
	if _, err := p.Call(context.Background(), "get_current_time", json.RawMessage(`{"format":"fancy"}`)); err == nil ||
		err.Error() != `get_current_time: format must be "simple" or "detailed" (got "fancy")` {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := p.Call(context.Background(), "nope", nil); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown service: %v", err)
	}
}

func TestDefaultClock(t *testing.T) {
	data, err := builtin.New(nil).Call(context.Background(), "get_current_time", nil)
	var s string
	if err != nil || json.Unmarshal(data, &s) != nil {
		t.Fatalf("%s %v", data, err)
	}
	if _, err := time.ParseInLocation(timefmt.SimpleLayout, s, time.Local); err != nil {
		t.Errorf("%q: %v", s, err)
	}
}

// The registry accepts the built-ins as they are.
func TestRegisters(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(builtin.New(nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("get_current_time"); !ok {
		t.Error("get_current_time not registered")
	}
}
