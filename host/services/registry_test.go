package services_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"

	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMergeTwoProviders(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	a := provider("plugin:a", "zeta", "alpha")
	a.svcs[0].Parameters = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	mustPut(t, r, a)
	mustPut(t, r, provider("mcp:b", "beta"))

	if got, want := names(r), "alpha,beta,zeta"; got != want {
		t.Fatalf("Entries = %s, want %s", got, want)
	}
	if o := owner(t, r, "beta"); o != "mcp:b" {
		t.Errorf("beta owned by %s", o)
	}
	reg := r.Register()
	if len(reg.Services) != 3 {
		t.Fatalf("Register has %d services, want 3", len(reg.Services))
	}
	if got := string(reg.Services["alpha"].Parameters); got != `{"type":"object"}` {
		t.Errorf("default parameters = %s", got)
	}
	if got := reg.Services["zeta"].Description; got != "does zeta" {
		t.Errorf("description = %q", got)
	}
	if len(r.Conflicts()) != 0 {
		t.Errorf("Conflicts = %q", r.Conflicts())
	}
	// Register hands out a copy.
	delete(reg.Services, "alpha")
	if _, ok := r.Register().Services["alpha"]; !ok {
		t.Error("mutating Register's map changed the registry")
	}
}

func TestRegisterCanonicalJSON(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	mustPut(t, r, builtin.New(nil))
	got, err := voice.MarshalMCP(voice.MCPRegister, r.Register())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"register","data":{"services":{"get_current_time":{"description":"Retrieve current date and time",` +
		`"parameters":{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"],` +
		`"description":"simple = short, detailed = full info"}}}}}}}`
	if string(got) != want {
		t.Errorf("register =\n%s\nwant\n%s", got, want)
	}
	if string(r.Canonical()) != want {
		t.Errorf("Canonical =\n%s", r.Canonical())
	}
}

func TestReplaceByID(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	mustPut(t, r, provider("plugin:a", "x", "y"))
	mustPut(t, r, provider("plugin:b", "z"))
	v2 := provider("plugin:a", "y", "w")
	mustPut(t, r, v2)
	if got, want := names(r), "w,y,z"; got != want {
		t.Fatalf("after replace: %s, want %s", got, want)
	}
	e, _ := r.Lookup("y")
	if e.Provider != services.Provider(v2) {
		t.Error("y still served by the old instance")
	}
}

func TestRemove(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	mustPut(t, r, provider("plugin:a", "x"))
	mustPut(t, r, provider("plugin:b", "y"))
	r.Remove("plugin:a")
	r.Remove("plugin:nobody")
	if got := names(r); got != "y" {
		t.Fatalf("after Remove: %s", got)
	}
	if _, ok := r.Lookup("x"); ok {
		t.Error("x still registered")
	}
}

func TestFallbackOverride(t *testing.T) {
	clock := func() *fake { return provider("plugin:clock", "get_current_time") }
	check := func(t *testing.T, r *services.Registry, logs *testbin.Buffer) {
		t.Helper()
		if o := owner(t, r, "get_current_time"); o != "plugin:clock" {
			t.Fatalf("get_current_time owned by %s, want plugin:clock", o)
		}
		if c := r.Conflicts(); len(c) != 0 {
			t.Errorf("an override is not a conflict: %q", c)
		}
		if !strings.Contains(logs.String(), "plugin:clock overrides built-in get_current_time") {
			t.Errorf("override not logged:\n%s", logs)
		}
		r.Remove("plugin:clock")
		if o := owner(t, r, "get_current_time"); o != "builtin" {
			t.Errorf("after the plugin left, owned by %s, want builtin", o)
		}
		if !strings.Contains(logs.String(), "no longer: plugin:clock overrides built-in get_current_time") {
			t.Errorf("restoring the built-in not logged:\n%s", logs)
		}
	}
	t.Run("plugin after builtin", func(t *testing.T) {
		log, logs := newLog()
		r := services.NewRegistry(services.RegistryOptions{Log: log})
		mustPut(t, r, builtin.New(nil))
		mustPut(t, r, clock())
		check(t, r, logs)
	})
	t.Run("plugin before builtin", func(t *testing.T) {
		log, logs := newLog()
		r := services.NewRegistry(services.RegistryOptions{Log: log})
		mustPut(t, r, clock())
		mustPut(t, r, builtin.New(nil))
		check(t, r, logs)
	})
}

func TestClash(t *testing.T) {
	log, logs := newLog()
	r := services.NewRegistry(services.RegistryOptions{Log: log})
	mustPut(t, r, provider("plugin:a", "x", "onlya"))
	mustPut(t, r, provider("plugin:b", "x", "onlyb"))

	if o := owner(t, r, "x"); o != "plugin:a" {
		t.Fatalf("x owned by %s, want plugin:a (neither is in the order: by ID)", o)
	}
	if got := names(r); got != "onlya,onlyb,x" {
		t.Errorf("names = %s", got)
	}
	c := r.Conflicts()
	if len(c) != 1 {
		t.Fatalf("Conflicts = %q, want one", c)
	}
	for _, want := range []string{`"x"`, "plugin:a", "plugin:b", `services.prefixes.b: "b_"`} {
		if !strings.Contains(c[0], want) {
			t.Errorf("conflict %q does not mention %s", c[0], want)
		}
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "services.prefixes.b") {
		t.Errorf("clash not logged as an error:\n%s", logs)
	}

	// A hot reload of the keeper keeps the name.
	mustPut(t, r, provider("plugin:a", "x", "onlya"))
	if o := owner(t, r, "x"); o != "plugin:a" {
		t.Errorf("after reloading plugin:a, x owned by %s", o)
	}
	// When the keeper leaves, the other gets the name and the clash is gone.
	r.Remove("plugin:a")
	if o := owner(t, r, "x"); o != "plugin:b" {
		t.Errorf("after plugin:a left, x owned by %s", o)
	}
	if c := r.Conflicts(); len(c) != 0 {
		t.Errorf("Conflicts after resolution = %q", c)
	}
}

func TestPrefixResolvesClash(t *testing.T) {
	for _, key := range []string{"b", "plugin:b"} {
		t.Run(key, func(t *testing.T) {
			r := services.NewRegistry(services.RegistryOptions{Prefixes: map[string]string{key: "b_"}})
			mustPut(t, r, provider("plugin:a", "x"))
			var gotMethod string
			b := provider("plugin:b", "x")
			b.call = func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
				gotMethod = method
				return json.RawMessage(`"from b"`), nil
			}
			mustPut(t, r, b)
			if c := r.Conflicts(); len(c) != 0 {
				t.Fatalf("Conflicts = %q", c)
			}
			if got := names(r); got != "b_x,x" {
				t.Fatalf("names = %s", got)
			}
			e, _ := r.Lookup("b_x")
			if e.Service.Name != "x" || e.Provider.ID() != "plugin:b" {
				t.Errorf("b_x entry = %+v", e)
			}
			d := services.NewDispatcher(r, services.DispatchOptions{})
			out := d.Dispatch(context.Background(), voice.Call{CallID: "1", Method: "b_x"})
			if !out.Success || string(out.Data) != `"from b"` || gotMethod != "x" {
				t.Errorf("dispatch b_x = %+v, provider saw method %q", out, gotMethod)
			}
		})
	}
}

// signalled reports whether a change signal is waiting, consuming it.
func signalled(r *services.Registry) bool {
	select {
	case <-r.Changes():
		return true
	default:
		return false
	}
}

func TestChanges(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{MinChangeInterval: -1}) // what counts as a change; pacing: TestChangesArePaced
	if signalled(r) {
		t.Fatal("new registry signalled")
	}
	schema := `{"type":"object","properties":{"x":{"type":"string"}}}`
	spaced := "{ \"type\" : \"object\",\n  \"properties\": { \"x\": {\"type\": \"string\"} } }"
	a := func(params, desc string) *fake {
		f := &fake{id: "plugin:a", svcs: []services.Service{svc("s", params)}}
		f.svcs[0].Description = desc
		return f
	}
	steps := []struct {
		name string
		do   func() error
		want bool
	}{
		{"first put", func() error { return r.Put(a(schema, "one")) }, true},
		{"identical put", func() error { return r.Put(a(schema, "one")) }, false},
		{"whitespace only", func() error { return r.Put(a(spaced, "one")) }, false},
		{"new instance, same set", func() error { return r.Put(a(schema, "one")) }, false},
		{"description changed", func() error { return r.Put(a(schema, "two")) }, true},
		{"schema changed", func() error { return r.Put(a(`{"type":"object"}`, "two")) }, true},
		{"fallback shadowed", func() error {
			return r.Put(&fake{id: "builtin", fallback: true, svcs: []services.Service{svc("s", `{"type":"object"}`)}})
		}, false},
		{"remove unknown", func() error { r.Remove("plugin:nobody"); return nil }, false},
		{"invalid put", func() error { r.Put(a(`{"type":"nope"}`, "x")); return nil }, false},
		{"second provider", func() error { return r.Put(provider("plugin:b", "t")) }, true},
		{"clashing provider", func() error { return r.Put(provider("plugin:c", "t")) }, false},
		{"keeper leaves, identical takes over", func() error { r.Remove("plugin:b"); return nil }, false},
		{"remove", func() error { r.Remove("plugin:c"); return nil }, true},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := signalled(r); got != s.want {
			t.Errorf("%s: signalled %v, want %v", s.name, got, s.want)
		}
		if signalled(r) {
			t.Errorf("%s: signalled twice", s.name)
		}
	}
	// Signals coalesce when nobody reads.
	r.Put(a(schema, "three"))
	r.Put(a(schema, "four"))
	if !signalled(r) || signalled(r) {
		t.Error("two unread changes should leave exactly one signal")
	}
}

func TestInvalidProviderKeepsOld(t *testing.T) {
	cases := []struct {
		name    string
		svcs    []services.Service
		problem string
	}{
		{"unknown type", []services.Service{svc("s", `{"type":"object","properties":{"a":{"type":"strnig"}}}`)}, `service "s": invalid parameters schema: properties.a.type: must be one of`},
		{"minimum not a number", []services.Service{svc("s", `{"type":"object","properties":{"a":{"minimum":"x"}}}`)}, `properties.a.minimum: must be a number (got string)`},
		{"not JSON", []services.Service{svc("s", `{"type":`)}, `service "s": parameters are not valid JSON`},
		{"not an object", []services.Service{svc("s", `[1]`)}, `must be a JSON Schema object, got array`},
		{"not an object type", []services.Service{svc("s", `{"type":"string"}`)}, `must describe an object`},
		{"external ref", []services.Service{svc("s", `{"type":"object","$ref":"file:///etc/passwd"}`)}, `must be self-contained`},
		{"relative ref", []services.Service{svc("s", `{"type":"object","$ref":"other.json"}`)}, `must be self-contained`},
		{"http ref", []services.Service{svc("s", `{"type":"object","properties":{"a":{"$ref":"http://example.com/s.json"}}}`)}, `must be self-contained`},
		{"bad name", []services.Service{svc("no spaces", "")}, `service "no spaces"`},
		{"empty name", []services.Service{svc("", "")}, `empty service name`},
		{"long name", []services.Service{svc(strings.Repeat("n", 65), "")}, `1 to 64`},
		{"twice", []services.Service{svc("s", ""), svc("s", "")}, `offered twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := services.NewRegistry(services.RegistryOptions{})
			old := provider("plugin:a", "keep")
			mustPut(t, r, old)
			signalled(r)
			bad := &fake{id: "plugin:a", svcs: append([]services.Service{svc("fine", "")}, c.svcs...)}
			err := r.Put(bad)
			if err == nil {
				t.Fatal("Put accepted an invalid provider")
			}
			for _, want := range []string{"plugin:a", c.problem} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if got := names(r); got != "keep" {
				t.Errorf("after a refused Put: %s, want keep", got)
			}
			if e, _ := r.Lookup("keep"); e.Provider != services.Provider(old) {
				t.Error("old instance replaced")
			}
			if signalled(r) {
				t.Error("refused Put signalled a change")
			}
		})
	}
}

func TestPrefixTooLong(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{Prefixes: map[string]string{"a": strings.Repeat("p", 60)}})
	err := r.Put(provider("plugin:a", "long_name"))
	if err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("err = %v", err)
	}
}

// TestReconfigurePrefixTooLongThenRemoved: a reload whose prefix makes a
// provider's names too long holds its services out of the set; the reload
// that removes the prefix brings them back, in their old place.
func TestReconfigurePrefixTooLongThenRemoved(t *testing.T) {
	log, logs := newLog()
	r := services.NewRegistry(services.RegistryOptions{Log: log})
	mustPut(t, r, provider("plugin:a", "long_name"))
	mustPut(t, r, provider("plugin:b", "other"))
	r.Reconfigure(map[string]string{"a": strings.Repeat("p", 60)}, services.Policy{})
	if got := names(r); got != "other" {
		t.Fatalf("with a prefix too long: %s, want other", got)
	}
	if !strings.Contains(logs.String(), "plugin:a") {
		t.Errorf("the provider held out is not named in the log:\n%s", logs)
	}
	r.Reconfigure(nil, services.Policy{})
	if got := names(r); got != "long_name,other" {
		t.Fatalf("after the prefix was removed: %s, want long_name,other", got)
	}
}

func TestServiceTimeoutKeptInEntry(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	f := provider("plugin:a", "s")
	f.svcs[0].Timeout = time.Minute
	mustPut(t, r, f)
	if e, _ := r.Lookup("s"); e.Service.Timeout != time.Minute || e.Schema == nil {
		t.Errorf("entry = %+v", e)
	}
}

// TestSubscribe: each subscriber gets its own coalesced signal when the set
// changes, Changes keeps working beside them, an unchanged set signals
// nothing, and a cancelled subscription gets no more.
func TestSubscribe(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{MinChangeInterval: -1})
	a, cancelA := r.Subscribe()
	b, cancelB := r.Subscribe()
	defer cancelB()
	mustPut(t, r, provider("plugin:x", "one"))
	mustPut(t, r, provider("plugin:x", "one", "two")) // a second change coalesces
	for name, ch := range map[string]<-chan struct{}{"a": a, "b": b, "Changes": r.Changes()} {
		select {
		case <-ch:
		default:
			t.Errorf("%s: no signal after a change", name)
		}
		select {
		case <-ch:
			t.Errorf("%s: two signals for changes nobody read in between", name)
		default:
		}
	}
	mustPut(t, r, provider("plugin:x", "one", "two")) // the same set
	select {
	case <-a:
		t.Error("a Put that changed nothing signalled")
	default:
	}
	cancelA()
	r.Remove("plugin:x")
	select {
	case <-a:
		t.Error("a cancelled subscription was signalled")
	default:
	}
	select {
	case <-b:
	default:
		t.Error("b: no signal after Remove")
	}
}
