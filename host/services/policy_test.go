package services_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// TestPolicyDecidesWhatIsOfferedAndCalled: services.allow and services.deny
// (glob patterns) keep a service out of the register and refuse its calls
// with a message that names the setting.
func TestPolicyDecidesWhatIsOfferedAndCalled(t *testing.T) {
	for _, tc := range []struct {
		name         string
		policy       services.Policy
		offered      []string
		refused      string
		refusedBySet string
	}{
		{"deny one", services.Policy{Deny: []string{"create_file"}}, []string{"get_current_time", "list_files"}, "create_file", "services.deny"},
		{"allow a glob", services.Policy{Allow: []string{"get_*", "list_*"}}, []string{"get_current_time", "list_files"}, "create_file", "services.allow"},
		{"deny wins", services.Policy{Allow: []string{"*"}, Deny: []string{"*_file*"}}, []string{"get_current_time"}, "list_files", "services.deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := services.NewRegistry(services.RegistryOptions{Policy: tc.policy})
			p := staticMulti{id: "files", names: []string{"create_file", "list_files", "get_current_time"}}
			if err := r.Put(p); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.Names(), ","); got != strings.Join(tc.offered, ",") {
				t.Fatalf("offered %s, want %s", got, strings.Join(tc.offered, ","))
			}
			if _, ok := r.Register().Services[tc.refused]; ok {
				t.Fatalf("%s is in the register", tc.refused)
			}
			d := services.NewDispatcher(r, services.DispatchOptions{})
			out := d.Dispatch(context.Background(), voice.Call{CallID: "c1", Method: tc.refused, Params: []byte(`{}`)})
			if out.Success || !strings.Contains(out.Error, "not allowed") || !strings.Contains(out.Error, tc.refusedBySet) {
				t.Fatalf("a call of %s: %+v", tc.refused, out)
			}
			if out := d.Dispatch(context.Background(), voice.Call{CallID: "c2", Method: tc.offered[0], Params: []byte(`{}`)}); !out.Success {
				t.Fatalf("a call of %s: %+v", tc.offered[0], out)
			}
		})
	}
}

func TestPolicyRefusesABadPattern(t *testing.T) {
	if err := (services.Policy{Deny: []string{"[oops"}}).Check(); err == nil || !strings.Contains(err.Error(), "[oops") {
		t.Fatalf("a malformed pattern: %v", err)
	}
}

type staticMulti struct {
	id    string
	names []string
}

func (p staticMulti) ID() string { return p.id }
func (p staticMulti) Services() []services.Service {
	var out []services.Service
	for _, n := range p.names {
		out = append(out, services.Service{Name: n, Description: n})
	}
	return out
}
func (p staticMulti) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"ok"`), nil
}
