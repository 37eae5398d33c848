package services_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// toolSchema exercises the seeds' keyword list.
const toolSchema = `{
  "type": "object",
  "properties": {
    "filename": {"type": "string", "minLength": 1, "maxLength": 8},
    "count":    {"type": "integer"},
    "volume":   {"type": "number", "minimum": 0, "maximum": 100},
    "format":   {"type": "string", "enum": ["simple", "detailed"]},
    "tags":     {"type": "array", "items": {"type": "string"}},
    "opts":     {"type": "object", "properties": {"level": {"$ref": "#/$defs/level"}}, "required": ["level"]}
  },
  "required": ["filename"],
  "$defs": {"level": {"type": "integer", "minimum": 1}}
}`

var fixed = time.Date(2025, 1, 22, 14, 30, 25, 0, time.UTC)

// setup registers the built-ins and a "tool" provider that echoes its
// params, and returns a dispatcher over them.
func setup(t testing.TB, opts services.DispatchOptions, extra ...services.Provider) (*services.Dispatcher, *services.Registry) {
	t.Helper()
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(builtin.New(func() time.Time { return fixed })); err != nil {
		t.Fatal(err)
	}
	tool := &fake{id: "plugin:tool", svcs: []services.Service{svc("tool", toolSchema)},
		call: func(_ context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
			return params, nil
		}}
	for _, p := range append([]services.Provider{tool}, extra...) {
		if err := r.Put(p); err != nil {
			t.Fatal(err)
		}
	}
	return services.NewDispatcher(r, opts), r
}

func call(d *services.Dispatcher, id, method, params string) voice.Outcome {
	c := voice.Call{CallID: id, Method: method}
	if params != "" {
		c.Params = json.RawMessage(params)
	}
	return d.Dispatch(context.Background(), c)
}

func wantError(t *testing.T, out voice.Outcome, want string) {
	t.Helper()
	if out.Success || out.Error != want {
		t.Errorf("outcome = %+v\nwant error %q", out, want)
	}
}

func TestValidation(t *testing.T) {
	d, _ := setup(t, services.DispatchOptions{})
	cases := []struct{ name, method, params, want string }{
		{"outside enum", "get_current_time", `{"format":"fancy"}`,
			`invalid parameters for get_current_time: format: must be one of "simple", "detailed" (got "fancy")`},
		{"missing required", "tool", `{}`, `invalid parameters for tool: missing required parameter "filename"`},
		{"wrong type", "tool", `{"filename":"a","count":"x"}`, `invalid parameters for tool: count: must be an integer (got string)`},
		{"not integral", "tool", `{"filename":"a","count":1.5}`, `invalid parameters for tool: count: must be an integer (got number)`},
		{"below minimum", "tool", `{"filename":"a","volume":-1}`, `invalid parameters for tool: volume: must be at least 0 (got -1)`},
		{"above maximum", "tool", `{"filename":"a","volume":150}`, `invalid parameters for tool: volume: must be at most 100 (got 150)`},
		{"above maximum, fraction", "tool", `{"filename":"a","volume":100.5}`, `invalid parameters for tool: volume: must be at most 100 (got 100.5)`},
		{"too short", "tool", `{"filename":""}`, `invalid parameters for tool: filename: must be at least 1 character long (got 0)`},
		{"too long", "tool", `{"filename":"123456789"}`, `invalid parameters for tool: filename: must be at most 8 characters long (got 9)`},
		{"array item", "tool", `{"filename":"a","tags":["x",2]}`, `invalid parameters for tool: tags[1]: must be a string (got number)`},
		{"nested required", "tool", `{"filename":"a","opts":{}}`, `invalid parameters for tool: missing required parameter "opts.level"`},
		{"through $ref", "tool", `{"filename":"a","opts":{"level":0}}`, `invalid parameters for tool: opts.level: must be at least 1 (got 0)`},
		{"several", "tool", `{"count":"x","volume":101}`,
			`invalid parameters for tool: count: must be an integer (got string); missing required parameter "filename"; volume: must be at most 100 (got 101)`},
		{"array params", "tool", `[1]`, `invalid parameters for tool: params must be a JSON object (got array)`},
		{"string params", "get_current_time", `"simple"`, `invalid parameters for get_current_time: params must be a JSON object (got string)`},
		{"not JSON", "get_current_time", `{"format":`, `invalid parameters for get_current_time: not valid JSON (unexpected EOF)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, call(d, "c1", c.method, c.params), c.want)
		})
	}
}

func TestValidParams(t *testing.T) {
	d, _ := setup(t, services.DispatchOptions{})
	cases := []struct{ name, method, params, want string }{
		{"null params", "get_current_time", `null`, `"2025-01-22 14:30:25"`},
		{"absent params", "get_current_time", ``, `"2025-01-22 14:30:25"`},
		{"simple", "get_current_time", `{"format":"simple"}`, `"2025-01-22 14:30:25"`},
		{"detailed", "get_current_time", `{"format":"detailed"}`, `"Wednesday, 22 January 2025, 14:30:25 UTC (UTC+00:00), ISO week 4"`},
		{"all keywords", "tool", `{"filename":"notes","count":3,"volume":100,"format":"simple","tags":["a"],"opts":{"level":1}}`,
			`{"filename":"notes","count":3,"volume":100,"format":"simple","tags":["a"],"opts":{"level":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := call(d, "c1", c.method, c.params)
			if !out.Success || string(out.Data) != c.want {
				t.Errorf("outcome = %+v (data %s), want data %s", out, out.Data, c.want)
			}
		})
	}
}

func TestUnknownService(t *testing.T) {
	d, _ := setup(t, services.DispatchOptions{})
	wantError(t, call(d, "c1", "nope", `{}`), `unknown service "nope"; registered: get_current_time, tool`)

	empty := services.NewDispatcher(services.NewRegistry(services.RegistryOptions{}), services.DispatchOptions{})
	wantError(t, call(empty, "c1", "nope", ""), `unknown service "nope"; no services are registered`)
}

func TestProviderPanics(t *testing.T) {
	log, logs := newLog()
	bad := &fake{id: "plugin:foo", svcs: []services.Service{svc("get_x", "")},
		call: func(context.Context, string, json.RawMessage) (json.RawMessage, error) { panic("boom") }}
	d, _ := setup(t, services.DispatchOptions{Log: log}, bad)
	wantError(t, call(d, "c1", "get_x", ""), "get_x failed: internal error in plugin:foo")
	for _, want := range []string{"level=ERROR", "provider panicked", "panic=boom", "plugin:foo", "goroutine"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if out := call(d, "c2", "get_current_time", ""); !out.Success {
		t.Errorf("the host stopped serving after a panic: %+v", out)
	}
	if n := d.InFlight(); n != 0 {
		t.Errorf("InFlight = %d after the panic", n)
	}
}

func TestProviderError(t *testing.T) {
	log, logs := newLog()
	bad := &fake{id: "plugin:foo", svcs: []services.Service{svc("get_x", "")},
		call: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("disk full")
		}}
	d, _ := setup(t, services.DispatchOptions{Log: log}, bad)
	wantError(t, call(d, "c1", "get_x", ""), "disk full")
	call(d, "c2", "get_current_time", "")
	var failed, succeeded bool
	for _, l := range strings.Split(logs.String(), "\n") {
		failed = failed || strings.Contains(l, `level=INFO msg="call failed"`) && strings.Contains(l, "method=get_x") &&
			strings.Contains(l, "success=false") && strings.Contains(l, `error="disk full"`) && strings.Contains(l, "duration=")
		succeeded = succeeded || strings.Contains(l, "level=DEBUG msg=call") && strings.Contains(l, "method=get_current_time") &&
			strings.Contains(l, "success=true") && strings.Contains(l, "duration=")
	}
	if !failed || !succeeded {
		t.Errorf("want the failure at info and the success at debug:\n%s", logs)
	}
}

func TestResults(t *testing.T) {
	big := `"` + strings.Repeat("a", 69998) + `"`
	results := map[string]string{"big": big, "empty": "", "space": "  ", "broken": `{"a":`, "exact": `"` + strings.Repeat("b", 64<<10-2) + `"`}
	p := &fake{id: "plugin:r", call: func(_ context.Context, m string, _ json.RawMessage) (json.RawMessage, error) {
		if results[m] == "" {
			return nil, nil
		}
		return json.RawMessage(results[m]), nil
	}}
	for n := range results {
		p.svcs = append(p.svcs, svc(n, ""))
	}
	d, _ := setup(t, services.DispatchOptions{}, p)
	wantError(t, call(d, "c1", "big", ""), "result of big is 70000 bytes, over the 64 KiB limit (services.max_result)")
	wantError(t, call(d, "c2", "broken", ""), "broken failed: plugin:r returned data that is not valid JSON")
	for _, m := range []string{"empty", "space"} {
		if out := call(d, "c3", m, ""); !out.Success || string(out.Data) != `""` {
			t.Errorf("%s: outcome %+v, want data \"\"", m, out)
		}
	}
	if out := call(d, "c4", "exact", ""); !out.Success || len(out.Data) != 64<<10 {
		t.Errorf("a result of exactly the limit was refused: %s", out.Error)
	}

	small, _ := setup(t, services.DispatchOptions{MaxResult: 1000}, p)
	wantError(t, call(small, "c1", "big", ""), "result of big is 70000 bytes, over the 1000 bytes limit (services.max_result)")
}

func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	entered := make(chan struct{}, 1)
	p := &fake{id: "plugin:slow", svcs: []services.Service{svc("get_x", ""), svc("stubborn", ""), svc("own", ""), svc("honest", "")},
		call: func(ctx context.Context, m string, _ json.RawMessage) (json.RawMessage, error) {
			switch m {
			case "stubborn": // ignores its ctx
				entered <- struct{}{}
				<-release
				return json.RawMessage(`"late"`), nil
			case "honest": // gives up when told
				<-ctx.Done()
				return nil, ctx.Err()
			}
			<-release // ignores its ctx too
			return json.RawMessage(`"too late"`), nil
		}}
	p.svcs[2].Timeout = time.Millisecond // "own": the service's own deadline
	p.svcs[0].Timeout = time.Hour        // "get_x": the config overrides it
	d, _ := setup(t, services.DispatchOptions{Timeout: time.Hour, Timeouts: map[string]time.Duration{
		"get_x": time.Millisecond, "stubborn": 2 * time.Millisecond,
	}}, p)

	wantError(t, call(d, "c1", "get_x", ""), "get_x did not answer within 1ms; it may still be running (raise services.timeouts.get_x)")
	wantError(t, call(d, "c2", "own", ""), "own did not answer within 1ms; it may still be running (raise services.timeouts.own)")
	// (honest runs on its own dispatcher: its slot is freed a moment after
	// its answer, which would make the count below racy.)
	d2, _ := setup(t, services.DispatchOptions{Timeouts: map[string]time.Duration{"honest": time.Millisecond}}, p)
	wantError(t, call(d2, "c3", "honest", ""), "honest did not answer within 1ms; it may still be running (raise services.timeouts.honest)")

	// A provider that ignores its ctx does not hold the answer back; it
	// stays in flight until it returns.
	wantError(t, call(d, "c4", "stubborn", ""), "stubborn did not answer within 2ms; it may still be running (raise services.timeouts.stubborn)")
	<-entered
	// get_x, own and stubborn ignore their ctx and still run.
	if n := d.InFlight(); n != 3 {
		t.Errorf("InFlight = %d while three abandoned calls run, want 3", n)
	}
	wantError(t, call(d, "c4", "get_current_time", ""), `duplicate call_id "c4": a call with this id is still running`)
}

func TestCallerCancels(t *testing.T) {
	p := &fake{id: "plugin:slow", svcs: []services.Service{svc("wait", "")},
		call: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	d, _ := setup(t, services.DispatchOptions{Timeout: time.Hour}, p)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := d.Dispatch(ctx, voice.Call{CallID: "c1", Method: "wait"})
	wantError(t, out, "wait was cancelled: context canceled")

	//lint:ignore SA1012 a nil ctx must not break the host either
	if out := d.Dispatch(nil, voice.Call{CallID: "c2", Method: "get_current_time"}); !out.Success { //nolint:staticcheck
		t.Errorf("nil ctx: %+v", out)
	}
}

// holder is a provider whose calls wait until the test lets them go.
type holder struct {
	fake
	entered chan string
	release chan struct{}
	once    sync.Once
}

// let lets every held call go.
func (h *holder) let() { h.once.Do(func() { close(h.release) }) }

func newHolder(t *testing.T) *holder {
	h := &holder{entered: make(chan string, 16), release: make(chan struct{})}
	h.fake = fake{id: "plugin:hold", svcs: []services.Service{svc("hold", `{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		call: func(_ context.Context, _ string, p json.RawMessage) (json.RawMessage, error) {
			h.entered <- string(p)
			<-h.release
			return p, nil
		}}
	t.Cleanup(h.let)
	return h
}

// dispatchAsync runs a call in the background; its outcome arrives on the channel.
func dispatchAsync(d *services.Dispatcher, id, method, params string) <-chan voice.Outcome {
	ch := make(chan voice.Outcome, 1)
	go func() { ch <- call(d, id, method, params) }()
	return ch
}

func TestInFlightBound(t *testing.T) {
	h := newHolder(t)
	d, _ := setup(t, services.DispatchOptions{MaxInFlight: 2, Timeout: time.Hour}, h)
	a := dispatchAsync(d, "a", "hold", `{"n":1}`)
	b := dispatchAsync(d, "b", "hold", `{"n":2}`)
	<-h.entered
	<-h.entered
	if n := d.InFlight(); n != 2 {
		t.Errorf("InFlight = %d, want 2", n)
	}
	wantError(t, call(d, "c", "get_current_time", ""), "busy: 2 calls in flight")
	h.let()
	for _, ch := range []<-chan voice.Outcome{a, b} {
		if out := <-ch; !out.Success {
			t.Errorf("held call failed: %+v", out)
		}
	}
	if n := d.InFlight(); n != 0 {
		t.Errorf("InFlight = %d after all answered", n)
	}
	if out := call(d, "c", "get_current_time", ""); !out.Success {
		t.Errorf("after the held calls: %+v", out)
	}
}

func TestDuplicateCallID(t *testing.T) {
	h := newHolder(t)
	d, _ := setup(t, services.DispatchOptions{Timeout: time.Hour}, h)
	first := dispatchAsync(d, "c1", "hold", `{"n":1}`)
	<-h.entered
	wantError(t, call(d, "c1", "get_current_time", ""), `duplicate call_id "c1": a call with this id is still running`)
	h.let()
	if out := <-first; !out.Success || string(out.Data) != `{"n":1}` {
		t.Errorf("the original call: %+v", out)
	}
	if out := call(d, "c1", "get_current_time", ""); !out.Success {
		t.Errorf("the id is free again once answered: %+v", out)
	}
}

func TestConcurrentCalls(t *testing.T) {
	const n = 200
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	p := &fake{id: "plugin:echo", svcs: []services.Service{svc("echo", `{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}`)},
		call: func(ctx context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			arrived++
			if arrived == n {
				close(all)
			}
			mu.Unlock()
			select { // every call is in flight at once before any answers
			case <-all:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return params, nil
		}}
	d, _ := setup(t, services.DispatchOptions{MaxInFlight: 256, MaxInFlightPerProvider: 256, Timeout: time.Hour}, p)
	outs := make([]voice.Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = call(d, fmt.Sprintf("call-%d", i), "echo", fmt.Sprintf(`{"i":%d}`, i))
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if want := fmt.Sprintf(`{"i":%d}`, i); !out.Success || string(out.Data) != want {
			t.Errorf("call %d: %+v, want %s", i, out, want)
		}
	}
	if n := d.InFlight(); n != 0 {
		t.Errorf("InFlight = %d after all answered", n)
	}
}

func TestErrorTextBounded(t *testing.T) {
	p := &fake{id: "plugin:loud", svcs: []services.Service{svc("loud", "")},
		call: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New(strings.Repeat("é", 1000))
		}}
	d, _ := setup(t, services.DispatchOptions{MaxResult: 101}, p)
	out := call(d, "c1", "loud", "")
	if out.Success || len(out.Error) > 101+len("…") || !strings.HasSuffix(out.Error, "…") {
		t.Errorf("error of %d bytes: %q", len(out.Error), out.Error)
	}
}

func TestFrameSafe(t *testing.T) {
	p := &fake{id: "plugin:m", svcs: []services.Service{svc("m", "")},
		call: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"text with ##END and ##START inside"`), nil
		}}
	d, _ := setup(t, services.DispatchOptions{}, p)
	out := call(d, "c1", "m", "")
	b, err := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: "c1", Result: out})
	if err != nil || strings.Contains(string(b), "##END") {
		t.Fatalf("payload %s, %v", b, err)
	}
	v, err := voice.ParseMCP(b)
	if err != nil || string(v.(*voice.Result).Result.Data) == "" {
		t.Fatalf("parse back: %v %v", v, err)
	}
	var s string
	json.Unmarshal(v.(*voice.Result).Result.Data, &s)
	if s != "text with ##END and ##START inside" {
		t.Errorf("round trip = %q", s)
	}
}

// TestAnInvalidCallLogsNoArgumentAtInfo: the failure of a call whose
// params do not match the schema is logged at info, but the values the
// model passed (what was said: a name, a place, a URL's token) are not:
// the host's own message quotes them ("got …"), so the caller gets it
// whole and the info line says only which service and that its
// parameters were invalid; the detail is at debug.
func TestAnInvalidCallLogsNoArgumentAtInfo(t *testing.T) {
	log, logs := newLog()
	d, _ := setup(t, services.DispatchOptions{Log: log})
	const said = "call-my-sister-anna-at-home"
	out := call(d, "c1", "tool", `{"format": "`+said+`"}`)
	if out.Success || !strings.Contains(out.Error, said) {
		t.Fatalf("outcome %+v: the caller is told what was wrong", out)
	}
	var logged bool
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, "level=DEBUG") && strings.Contains(l, said) {
			t.Errorf("a tool call's argument is in a log line above debug: %s", l)
		}
		logged = logged || strings.Contains(l, `level=INFO msg="call failed"`) && strings.Contains(l, "method=tool") && strings.Contains(l, "invalid parameters for tool")
	}
	if !logged {
		t.Errorf("want the failure at info:\n%s", logs)
	}
}
