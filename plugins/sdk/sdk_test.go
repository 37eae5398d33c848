package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

func okHandler(context.Context, Params) (any, error) { return "ok", nil }

func validPlugin() Plugin {
	return Plugin{Name: "t", Version: "1", Services: []Service{{Name: "s", Description: "d", Handler: okHandler}}}
}

func TestValidate(t *testing.T) {
	if err := Validate(validPlugin()); err != nil {
		t.Fatalf("valid plugin: %v", err)
	}
	cases := map[string]struct {
		edit func(*Plugin)
		want string
	}{
		"bad name":     {func(p *Plugin) { p.Name = "My Plugin" }, `plugin name "My Plugin"`},
		"no version":   {func(p *Plugin) { p.Version = "" }, "version is empty"},
		"no services":  {func(p *Plugin) { p.Services = nil }, "no services"},
		"service name": {func(p *Plugin) { p.Services[0].Name = "a b" }, `service "a b": name must be`},
		"duplicate":    {func(p *Plugin) { p.Services = append(p.Services, p.Services[0]) }, `service "s": offered twice`},
		"no desc":      {func(p *Plugin) { p.Services[0].Description = "" }, "description is empty"},
		"no handler":   {func(p *Plugin) { p.Services[0].Handler = nil }, "no handler"},
		"not json":     {func(p *Plugin) { p.Services[0].Schema = `{"type":` }, "schema is not valid JSON"},
		"not object":   {func(p *Plugin) { p.Services[0].Schema = `{"type":"string"}` }, `"type": "object"`},
		"no type":      {func(p *Plugin) { p.Services[0].Schema = `{"properties":{}}` }, `got "type": (missing)`},
		"bad keyword":  {func(p *Plugin) { p.Services[0].Schema = `{"type":"object","properties":{"n":{"type":"strin"}}}` }, "not a valid JSON Schema"},
		"bad minimum":  {func(p *Plugin) { p.Services[0].Schema = `{"type":"object","properties":{"n":{"minimum":"x"}}}` }, "not a valid JSON Schema"},
		"bad props":    {func(p *Plugin) { p.Services[0].Schema = `{"type":"object","properties":[]}` }, `"properties" must be an object`},
		"bad typed": {func(p *Plugin) {
			p.Services[0] = TypedService("s", "d", func(context.Context, struct{ C chan int }) (any, error) { return nil, nil })
		}, "unsupported type chan int"},
		"neg timeout":  {func(p *Plugin) { p.Services[0].Timeout = -time.Second }, "negative timeout"},
		"two problems": {func(p *Plugin) { p.Version = ""; p.Services[0].Description = "" }, "version is empty\nservice \"s\": description is empty"},
	}
	for name, c := range cases {
		p := validPlugin()
		p.Services = append([]Service(nil), p.Services...)
		c.edit(&p)
		err := Validate(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

type greet struct {
	Name   string            `json:"name" desc:"who" minLength:"1" maxLength:"20"`
	Times  int               `json:"times,omitempty" min:"1" max:"3"`
	Mood   string            `json:"mood,omitempty" enum:"happy, sad"`
	Fields []string          `json:"fields,omitempty" enum:"a,b"`
	Ratio  *float64          `json:"ratio"`
	Loud   bool              `json:"loud"`
	Tags   map[string]string `json:"tags,omitempty"`
	When   time.Time         `json:"when,omitzero"`
	Any    any               `json:"any,omitempty"`
	Skip   string            `json:"-"`
	hidden string            //lint:ignore U1000 the schema generator must skip unexported fields
	Inner  struct {
		X float32 `json:"x" enum:"1,2.5"`
	} `json:"inner,omitempty"`
	Embedded
}

type Embedded struct {
	Extra uint8 `json:"extra,omitempty"`
}

func TestSchemaFor(t *testing.T) {
	got, err := SchemaFor[greet]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"name":{"type":"string","description":"who","minLength":1,"maxLength":20},` +
		`"times":{"type":"integer","minimum":1,"maximum":3},` +
		`"mood":{"type":"string","enum":["happy","sad"]},` +
		`"fields":{"type":"array","items":{"type":"string","enum":["a","b"]}},` +
		`"ratio":{"type":"number"},` +
		`"loud":{"type":"boolean"},` +
		`"tags":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"when":{"type":"string"},` +
		`"any":{},` +
		`"inner":{"type":"object","properties":{"x":{"type":"number","enum":[1,2.5]}},"required":["x"]},` +
		`"extra":{"type":"integer"}},` +
		`"required":["name","loud"]}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := compileSchema("greet", got); err != nil {
		t.Errorf("derived schema does not compile: %v", err)
	}
	if _, err := SchemaFor[string](); err == nil {
		t.Error("SchemaFor[string] should fail")
	}
	type rec struct {
		Next *rec `json:"next"`
	}
	if _, err := SchemaFor[rec](); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive: %v", err)
	}
	type badEnum struct {
		N int `json:"n" enum:"one"`
	}
	if _, err := SchemaFor[badEnum](); err == nil {
		t.Error("non-numeric enum on int should fail")
	}
}

func localOf(t *testing.T, p Plugin) pluginv1.Client {
	t.Helper()
	c, err := Local(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCallError(t *testing.T, what string, err error, kind pluginv1.ErrorKind, msg string) {
	t.Helper()
	ce, ok := pluginv1.AsCallError(err)
	if !ok {
		t.Errorf("%s: err = %v (%T), want a CallError", what, err, err)
		return
	}
	if ce.Kind != kind || !strings.Contains(ce.Message, msg) {
		t.Errorf("%s: got %s %q, want %s containing %q", what, ce.Kind, ce.Message, kind, msg)
	}
}

func TestCallOutcomes(t *testing.T) {
	slog.SetDefault(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))) // keep panic logs out of the test output
	schema := `{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"]},"n":{"type":"integer","minimum":1,"maximum":5},"s":{"type":"string","minLength":2}},"required":["format"]}`
	p := Plugin{Name: "t", Version: "1", Services: []Service{
		{Name: "echo", Description: "d", Schema: schema, Handler: func(_ context.Context, p Params) (any, error) { return p.Raw(), nil }},
		{Name: "fail", Description: "d", Handler: func(context.Context, Params) (any, error) { return nil, errors.New("the disk is full") }},
		{Name: "invalid", Description: "d", Handler: func(context.Context, Params) (any, error) { return nil, InvalidParams("no such city") }},
		{Name: "panic", Description: "d", Handler: func(context.Context, Params) (any, error) { panic("oops") }},
		{Name: "owndeadline", Description: "d", Handler: func(context.Context, Params) (any, error) { return nil, context.DeadlineExceeded }},
		{Name: "slow", Description: "d", Handler: func(ctx context.Context, _ Params) (any, error) { <-ctx.Done(); return nil, ctx.Err() }},
		{Name: "struct", Description: "d", Handler: func(context.Context, Params) (any, error) {
			return struct {
				A int    `json:"a"`
				B string `json:"b"`
			}{1, "x"}, nil
		}},
		{Name: "huge", Description: "d", Handler: func(context.Context, Params) (any, error) { return strings.Repeat("x", MaxResultBytes), nil }},
		{Name: "nil", Description: "d", Handler: func(context.Context, Params) (any, error) { return nil, nil }},
		{Name: "badraw", Description: "d", Handler: func(context.Context, Params) (any, error) { return json.RawMessage("{"), nil }},
		{Name: "unencodable", Description: "d", Handler: func(context.Context, Params) (any, error) { return func() {}, nil }},
		TypedService("typed", "d", func(_ context.Context, in struct {
			N int `json:"n"`
		}) (any, error) {
			return in.N * 2, nil
		}),
	}}
	c := localOf(t, p)
	ctx := context.Background()

	data, err := c.Call(ctx, "echo", json.RawMessage(`{"format":"simple","n":3}`))
	if err != nil || string(data) != `{"format":"simple","n":3}` {
		t.Errorf("echo: %s %v", data, err)
	}
	_, err = c.Call(ctx, "echo", json.RawMessage(`{"format":"long"}`))
	wantCallError(t, "enum", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, `invalid params for echo: at "format": value must be one of`)
	_, err = c.Call(ctx, "echo", json.RawMessage(`{}`))
	wantCallError(t, "required", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, "missing property 'format'")
	_, err = c.Call(ctx, "echo", json.RawMessage(`{"format":"simple","n":9}`))
	wantCallError(t, "maximum", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, `at "n"`)
	_, err = c.Call(ctx, "echo", json.RawMessage(`{"format":"simple","s":"x"}`))
	wantCallError(t, "minLength", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, `at "s"`)
	_, err = c.Call(ctx, "echo", json.RawMessage(`[1]`))
	wantCallError(t, "array params", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, "invalid params")

	_, err = c.Call(ctx, "nope", nil)
	wantCallError(t, "unknown", err, pluginv1.ErrorKind_ERROR_KIND_UNKNOWN_METHOD, `plugin t has no service "nope"`)
	_, err = c.Call(ctx, "fail", nil)
	wantCallError(t, "fail", err, pluginv1.ErrorKind_ERROR_KIND_FAILED, "the disk is full")
	_, err = c.Call(ctx, "invalid", nil)
	wantCallError(t, "InvalidParams", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, "no such city")
	_, err = c.Call(ctx, "panic", nil)
	wantCallError(t, "panic", err, pluginv1.ErrorKind_ERROR_KIND_PANIC, "panic failed because of an internal error in plugin t")
	if data, err := c.Call(ctx, "nil", nil); err != nil || string(data) != "null" {
		t.Errorf("still serving after a panic: %s %v", data, err)
	}

	dctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	_, err = c.Call(dctx, "slow", nil)
	if _, isCallErr := pluginv1.AsCallError(err); isCallErr || status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("deadline: %v", err)
	}
	_, err = c.Call(ctx, "owndeadline", nil)
	wantCallError(t, "own deadline", err, pluginv1.ErrorKind_ERROR_KIND_FAILED, "owndeadline did not finish in time: context deadline exceeded")

	if data, err := c.Call(ctx, "struct", nil); err != nil || string(data) != `{"a":1,"b":"x"}` {
		t.Errorf("struct: %s %v", data, err)
	}
	_, err = c.Call(ctx, "huge", nil)
	wantCallError(t, "huge", err, pluginv1.ErrorKind_ERROR_KIND_FAILED, "huge failed: its result is too large")
	_, err = c.Call(ctx, "badraw", nil)
	wantCallError(t, "badraw", err, pluginv1.ErrorKind_ERROR_KIND_FAILED, "could not be encoded")
	_, err = c.Call(ctx, "unencodable", nil)
	wantCallError(t, "unencodable", err, pluginv1.ErrorKind_ERROR_KIND_FAILED, "could not be encoded")
	if data, err := c.Call(ctx, "typed", json.RawMessage(`{"n":21}`)); err != nil || string(data) != "42" {
		t.Errorf("typed: %s %v", data, err)
	}
	_, err = c.Call(ctx, "typed", json.RawMessage(`{"n":"x"}`))
	wantCallError(t, "typed schema", err, pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, `at "n"`)
}

// A plugin without Configure that is handed a config warns, naming only the
// top-level keys: the values may be API keys.
func TestConfigureIgnoredLogsKeysOnly(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	defer slog.SetDefault(old)
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	c, err := Local(validPlugin())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const cfg = `{"zone":"eu","api_key":"sk-s3cr3t","auth":{"password":"hunter2-s3cr3t"}}`
	if err := c.Configure(ctx, json.RawMessage(cfg)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "eu") {
		t.Errorf("the warning shows config values:\n%s", out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "takes no configuration") ||
		!strings.Contains(out, "keys=\"[api_key auth zone]\"") {
		t.Errorf("want a warning naming the sorted keys, got:\n%s", out)
	}

	for _, quiet := range []string{"", "null", "{}", " { } "} {
		buf.Reset()
		if err := c.Configure(ctx, json.RawMessage(quiet)); err != nil {
			t.Fatal(err)
		}
		if buf.Len() != 0 {
			t.Errorf("config %q logged:\n%s", quiet, buf.String())
		}
	}

	buf.Reset()
	if err := c.Configure(ctx, json.RawMessage(`["sk-s3cr3t"]`)); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.Contains(out, "s3cr3t") || !strings.Contains(out, "not a JSON object") {
		t.Errorf("non-object config: %s", out)
	}
}

func TestConfigureLifecycle(t *testing.T) {
	var applied string
	p := validPlugin()
	p.Configure = func(raw json.RawMessage) error {
		var cfg struct {
			Mode string `json:"mode"`
		}
		if err := DecodeConfig(raw, &cfg); err != nil {
			return err
		}
		if cfg.Mode == "explode" {
			panic("kaboom")
		}
		applied = cfg.Mode
		return nil
	}
	p.Health = func(context.Context) error { return errors.New("sensor offline") }
	slog.SetDefault(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	c, err := Local(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = c.Call(ctx, "s", nil)
	wantCallError(t, "before configure", err, pluginv1.ErrorKind_ERROR_KIND_NOT_CONFIGURED, "plugin t is not configured yet")
	if err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Errorf("health before configure: %v", err)
	}

	err = c.Configure(ctx, json.RawMessage(`{"mood":"x"}`))
	var cerr *pluginv1.ConfigError
	if !errors.As(err, &cerr) || cerr.Message != `unknown option "mood"` {
		t.Errorf("unknown option: %v", err)
	}
	_, err = c.Call(ctx, "s", nil)
	wantCallError(t, "after rejection", err, pluginv1.ErrorKind_ERROR_KIND_NOT_CONFIGURED, `its config was rejected: unknown option "mood"`)

	if err := c.Configure(ctx, json.RawMessage(`{"mode":"a"}`)); err != nil || applied != "a" {
		t.Fatalf("configure: %v, applied %q", err, applied)
	}
	if _, err := c.Call(ctx, "s", nil); err != nil {
		t.Errorf("call after configure: %v", err)
	}
	if err := c.Health(ctx); err == nil || err.Error() != "sensor offline" {
		t.Errorf("health: %v", err)
	}
	// A later rejection (or panic) keeps the plugin configured.
	if err := c.Configure(ctx, json.RawMessage(`{"mode":"explode"}`)); err == nil || !strings.Contains(err.Error(), "panic: kaboom") {
		t.Errorf("panicking configure: %v", err)
	}
	if _, err := c.Call(ctx, "s", nil); err != nil {
		t.Errorf("call after a rejected reload: %v", err)
	}
}

func TestParams(t *testing.T) {
	p := MustParams(`{"s":"x","b":true,"n":3,"f":1.5,"arr":["a",1,"b"],"null":null}`)
	if p.String("s") != "x" || p.String("n") != "" || p.StringOr("missing", "d") != "d" || p.StringOr("s", "d") != "x" {
		t.Error("String/StringOr")
	}
	if !p.Bool("b") || p.Bool("s") || p.Int("n") != 3 || p.Int("f") != 0 || p.Float("f") != 1.5 || p.Float("n") != 3 {
		t.Error("Bool/Int/Float")
	}
	if got := p.Strings("arr"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Strings = %v", got)
	}
	if !p.Has("null") || p.Has("missing") {
		t.Error("Has")
	}
	var v struct {
		S string `json:"s"`
	}
	if err := p.Decode(&v); err != nil || v.S != "x" {
		t.Errorf("Decode: %v %+v", err, v)
	}
	if _, err := NewParams(json.RawMessage(`null`)); err == nil {
		t.Error("null params should be rejected")
	}
	if p, err := NewParams(nil); err != nil || string(p.Raw()) != "{}" {
		t.Errorf("empty params: %v", err)
	}
}

func TestDecodeConfig(t *testing.T) {
	type cfg struct {
		Root     string `json:"root"`
		MaxBytes int64  `json:"max_bytes"`
	}
	var c cfg
	if err := DecodeConfig(nil, &c); err != nil {
		t.Error(err)
	}
	if err := DecodeConfig(json.RawMessage(`{"root":"/x","max_bytes":5}`), &c); err != nil || c.Root != "/x" || c.MaxBytes != 5 {
		t.Errorf("%v %+v", err, c)
	}
	if err := DecodeConfig(json.RawMessage(`{"max_bytes":"big"}`), &c); err == nil || err.Error() != `option "max_bytes": want int64, got string` {
		t.Errorf("type: %v", err)
	}
	if err := DecodeConfig(json.RawMessage(`{"rot":"/x"}`), &c); err == nil || err.Error() != `unknown option "rot"` {
		t.Errorf("unknown: %v", err)
	}
}

// The log lines must be what go-plugin's host side parses as JSON: "@level",
// "@message" and "@timestamp" in hclog's layout.
func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	defer slog.SetDefault(old)
	setupLogging(&buf, LevelTrace)
	slog.Log(context.Background(), LevelTrace, "tracing", "k", 1)
	slog.Debug("debugging")
	slog.Info("hello", "user", "ann", slog.Group("g", "a", 1))
	slog.Warn("careful")
	slog.Error("broken", "error", "disk full")
	log.Printf("from the log package")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []struct{ level, msg string }{
		{"trace", "tracing"}, {"debug", "debugging"}, {"info", "hello"}, {"warn", "careful"}, {"error", "broken"}, {"info", "from the log package"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %s", i, line)
		}
		if m["@level"] != want[i].level || m["@message"] != want[i].msg {
			t.Errorf("line %d = %s, want level %s message %s", i, line, want[i].level, want[i].msg)
		}
		ts, _ := m["@timestamp"].(string)
		if _, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", ts); err != nil {
			t.Errorf("line %d timestamp %q: %v", i, ts, err)
		}
	}
	if !strings.Contains(lines[2], `"user":"ann","g":{"a":1}`) {
		t.Errorf("attributes: %s", lines[2])
	}
}

func TestLogLevelFromEnv(t *testing.T) {
	for in, want := range map[string]slog.Level{"": slog.LevelDebug, "TRACE": LevelTrace, "info": slog.LevelInfo, "warning": slog.LevelWarn, "error": slog.LevelError, "bogus": slog.LevelDebug} {
		if got := logLevel(in); got != want {
			t.Errorf("logLevel(%q) = %v, want %v", in, got, want)
		}
	}
}
