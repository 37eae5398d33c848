package pluginv1

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fake is a Server whose behaviour each test sets.
type fake struct {
	describe  func() (*Description, error)
	configure func(json.RawMessage) error
	call      func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	health    func() error
}

func (f *fake) Describe(context.Context) (*Description, error) { return f.describe() }
func (f *fake) Configure(_ context.Context, c json.RawMessage) error {
	return f.configure(c)
}
func (f *fake) Call(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
	return f.call(ctx, m, p)
}
func (f *fake) Health(context.Context) error { return f.health() }

// connect serves impl through go-plugin's in-memory gRPC connection and
// dispenses the client the host would get.
func connect(t *testing.T, impl Server) Client {
	t.Helper()
	c, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginName: &GRPCPlugin{Impl: impl}})
	t.Cleanup(func() { c.Close() })
	raw, err := c.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(Client)
}

func TestDescribeRoundTrip(t *testing.T) {
	want := &Description{Name: "clock", Version: "1.2.3", SDK: "x/1", Services: []ServiceSpec{
		{Name: "a", Description: "A", Parameters: json.RawMessage(`{"type":"object"}`), Timeout: 1500 * time.Millisecond},
		{Name: "b", Description: "B", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}}
	c := connect(t, &fake{describe: func() (*Description, error) { return want, nil }})
	got, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || got.Version != want.Version || got.SDK != want.SDK || len(got.Services) != 2 {
		t.Fatalf("got %+v", got)
	}
	for i := range want.Services {
		g, w := got.Services[i], want.Services[i]
		if g.Name != w.Name || g.Description != w.Description || string(g.Parameters) != string(w.Parameters) || g.Timeout != w.Timeout {
			t.Errorf("service %d: got %+v, want %+v", i, g, w)
		}
	}

	c = connect(t, &fake{describe: func() (*Description, error) {
		return &Description{Name: "x", Services: []ServiceSpec{{Name: "bad", Parameters: json.RawMessage(`{`)}}}, nil
	}})
	if _, err := c.Describe(context.Background()); err == nil || !strings.Contains(err.Error(), `service "bad": parameters are not valid JSON`) {
		t.Errorf("invalid parameters: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	var got []string
	c := connect(t, &fake{configure: func(cfg json.RawMessage) error {
		got = append(got, string(cfg))
		switch string(cfg) {
		case `{"bad":true}`:
			return errors.New("bad is not an option")
		case `{"typed":true}`:
			return &ConfigError{Message: "typed rejection"}
		case `{"panic":true}`:
			panic("boom")
		}
		return nil
	}})
	ctx := context.Background()
	if err := c.Configure(ctx, nil); err != nil {
		t.Error(err)
	}
	if err := c.Configure(ctx, json.RawMessage(`{"tz":"UTC"}`)); err != nil {
		t.Error(err)
	}
	var ce *ConfigError
	if err := c.Configure(ctx, json.RawMessage(`{"bad":true}`)); !errors.As(err, &ce) || ce.Message != "bad is not an option" || err.Error() != "config rejected: bad is not an option" {
		t.Errorf("rejection: %v", err)
	}
	if err := c.Configure(ctx, json.RawMessage(`{"typed":true}`)); !errors.As(err, &ce) || ce.Message != "typed rejection" {
		t.Errorf("typed rejection: %v", err)
	}
	if err := c.Configure(ctx, json.RawMessage(`{"panic":true}`)); err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "Configure panicked: boom") {
		t.Errorf("panic: %v", err)
	}
	if err := c.Configure(ctx, json.RawMessage(`{`)); !errors.As(err, &ce) || ce.Message != "config is not valid JSON" {
		t.Errorf("invalid JSON: %v", err)
	}
	if strings.Join(got, " ") != `{} {"tz":"UTC"} {"bad":true} {"typed":true} {"panic":true}` {
		t.Errorf("plugin got %q", got)
	}
}

func TestCallOutcomes(t *testing.T) {
	c := connect(t, &fake{call: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		switch m {
		case "echo":
			return p, nil
		case "nil":
			return nil, nil
		case "no":
			return nil, NewCallError(ErrorKind_ERROR_KIND_FAILED, "file %s exists", "a.txt")
		case "wrapped":
			return nil, errors.Join(errors.New("context"), &CallError{Kind: ErrorKind_ERROR_KIND_INVALID_PARAMS, Message: "bad city"})
		case "plain":
			return nil, errors.New("disk full")
		case "unspecified":
			return nil, &CallError{Message: "no kind"}
		case "badjson":
			return json.RawMessage(`{`), nil
		case "panic":
			panic("kaboom")
		case "wait":
			<-ctx.Done()
			return nil, NewCallError(ErrorKind_ERROR_KIND_FAILED, "gave up")
		}
		return nil, NewCallError(ErrorKind_ERROR_KIND_UNKNOWN_METHOD, "no %s", m)
	}})
	ctx := context.Background()
	check := func(method, params string, wantData string, wantKind ErrorKind, wantMsg string) {
		t.Helper()
		data, err := c.Call(ctx, method, json.RawMessage(params))
		if wantKind == ErrorKind_ERROR_KIND_UNSPECIFIED {
			if err != nil || string(data) != wantData {
				t.Errorf("%s: data %s err %v, want %s", method, data, err, wantData)
			}
			return
		}
		ce, ok := AsCallError(err)
		if !ok || ce.Kind != wantKind || !strings.Contains(ce.Message, wantMsg) {
			t.Errorf("%s: err %v (%T), want %s %q", method, err, err, wantKind, wantMsg)
		}
	}
	check("echo", `{"a":[1,"x"]}`, `{"a":[1,"x"]}`, 0, "")
	check("echo", ``, `{}`, 0, "")
	check("nil", `{}`, `null`, 0, "")
	check("no", `{}`, "", ErrorKind_ERROR_KIND_FAILED, "file a.txt exists")
	check("wrapped", `{}`, "", ErrorKind_ERROR_KIND_INVALID_PARAMS, "bad city")
	check("plain", `{}`, "", ErrorKind_ERROR_KIND_FAILED, "disk full")
	check("unspecified", `{}`, "", ErrorKind_ERROR_KIND_FAILED, "no kind")
	check("badjson", `{}`, "", ErrorKind_ERROR_KIND_FAILED, "badjson failed: the plugin produced invalid JSON")
	check("panic", `{}`, "", ErrorKind_ERROR_KIND_PANIC, "internal error in the plugin (panic: kaboom)")
	check("echo", `{`, "", ErrorKind_ERROR_KIND_INVALID_PARAMS, "params are not valid JSON")
	check("other", `{}`, "", ErrorKind_ERROR_KIND_UNKNOWN_METHOD, "no other")

	// A call whose deadline passes ends with DeadlineExceeded, also when the
	// plugin noticed first and answered with an error of its own.
	for range 20 {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err := c.Call(dctx, "wait", nil)
		cancel()
		if _, isCallErr := AsCallError(err); isCallErr || status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("deadline: %v", err)
		}
	}

	// A cancelled context is a transport error, not a CallError.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Call(cctx, "echo", nil); err == nil {
		t.Error("call with a cancelled context succeeded")
	} else if _, ok := AsCallError(err); ok {
		t.Errorf("cancelled call gave a CallError: %v", err)
	}
}

func TestHealth(t *testing.T) {
	var state error
	c := connect(t, &fake{health: func() error { return state }})
	if err := c.Health(context.Background()); err != nil {
		t.Error(err)
	}
	state = errors.New("sensor offline")
	if err := c.Health(context.Background()); !errors.Is(err, ErrUnhealthy) || err.Error() != "plugin unhealthy: sensor offline" {
		t.Errorf("unhealthy: %v", err)
	}
}

func TestHandshakeAndPluginSet(t *testing.T) {
	if Handshake.ProtocolVersion != 1 || Handshake.MagicCookieKey == "" || Handshake.MagicCookieValue == "" {
		t.Errorf("handshake = %+v", Handshake)
	}
	if _, ok := PluginSet()[PluginName].(*GRPCPlugin); !ok {
		t.Errorf("PluginSet() = %v", PluginSet())
	}
	if err := (&GRPCPlugin{}).GRPCServer(nil, nil); err == nil {
		t.Error("GRPCServer without Impl should fail")
	}
}

// TestCallInfoTravels: the caller and the owner's list that the host puts
// in the call's context reach the plugin's; a call without them arrives
// as the least trusted caller with nothing allowed.
func TestCallInfoTravels(t *testing.T) {
	c := connect(t, &fake{call: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		return json.Marshal(CallInfoFrom(ctx))
	}})
	got, err := c.Call(WithCallInfo(context.Background(), CallInfo{Caller: Caller_CALLER_OWNER, NetworkAllow: []string{"radio.lan", "10.0.0.0/8"}}), "x", nil)
	if err != nil || string(got) != `{"Caller":3,"NetworkAllow":["radio.lan","10.0.0.0/8"]}` {
		t.Errorf("with call info: %s %v", got, err)
	}
	got, err = c.Call(context.Background(), "x", nil)
	if err != nil || string(got) != `{"Caller":0,"NetworkAllow":null}` {
		t.Errorf("without: %s %v", got, err)
	}
}
