package services_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/host/services"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is a provider whose services and behaviour a test sets.
type fake struct {
	id       string
	fallback bool
	svcs     []services.Service
	call     func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

func (f *fake) ID() string                   { return f.id }
func (f *fake) Fallback() bool               { return f.fallback }
func (f *fake) Services() []services.Service { return f.svcs }
func (f *fake) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if f.call != nil {
		return f.call(ctx, method, params)
	}
	return json.Marshal(f.id + "/" + method)
}

// svc is a service with the given name and schema ("" for none).
func svc(name, params string) services.Service {
	s := services.Service{Name: name, Description: "does " + name}
	if params != "" {
		s.Parameters = json.RawMessage(params)
	}
	return s
}

func provider(id string, names ...string) *fake {
	f := &fake{id: id}
	for _, n := range names {
		f.svcs = append(f.svcs, svc(n, ""))
	}
	return f
}

func newLog() (*slog.Logger, *testbin.Buffer) {
	b := &testbin.Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

func mustPut(t *testing.T, r *services.Registry, p services.Provider) {
	t.Helper()
	if err := r.Put(p); err != nil {
		t.Fatalf("Put(%s): %v", p.ID(), err)
	}
}

func names(r *services.Registry) string {
	var n []string
	for _, e := range r.Entries() {
		n = append(n, e.Name)
	}
	return strings.Join(n, ",")
}

func owner(t *testing.T, r *services.Registry, name string) string {
	t.Helper()
	e, ok := r.Lookup(name)
	if !ok {
		t.Fatalf("Lookup(%q): not registered; have %s", name, names(r))
	}
	return e.Provider.ID()
}
