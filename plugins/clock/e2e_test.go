package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/plugins/internal/plugintest"
	"github.com/agenthost/agenthost/plugins/sdk"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

func TestEndToEnd(t *testing.T) {
	bin := plugintest.Build(t, "github.com/agenthost/agenthost/plugins/clock")
	p := plugintest.Start(t, bin, plugintest.Options{})
	ctx := context.Background()

	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "clock" || d.Version != version || d.SDK != sdk.Version || len(d.Services) != 1 {
		t.Fatalf("describe = %+v", d)
	}

	// Calls before Configure are refused.
	_, err = p.Call(ctx, "get_current_time", nil)
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_NOT_CONFIGURED {
		t.Errorf("call before configure: %v", err)
	}

	var cerr *pluginv1.ConfigError
	if err := p.Configure(ctx, json.RawMessage(`{"timezone":"Nowhere/Special"}`)); !errors.As(err, &cerr) || !strings.Contains(cerr.Message, "Nowhere/Special") {
		t.Errorf("bad timezone: %v", err)
	}
	if err := p.Configure(ctx, json.RawMessage(`{"timezone":"Asia/Shanghai"}`)); err != nil {
		t.Fatal(err)
	}
	if err := p.Health(ctx); err != nil {
		t.Errorf("health: %v", err)
	}

	data, err := p.Call(ctx, "get_current_time", json.RawMessage(`{"format":"simple"}`))
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil || !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`).MatchString(s) {
		t.Errorf("simple = %s (%v)", data, err)
	}
	data, err = p.Call(ctx, "get_current_time", json.RawMessage(`{"format":"detailed"}`))
	if err != nil || !strings.Contains(string(data), "(UTC+08:00, Asia/Shanghai)") {
		t.Errorf("detailed = %s (%v)", data, err)
	}

	_, err = p.Call(ctx, "get_current_time", json.RawMessage(`{"format":7}`))
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS {
		t.Errorf("format 7: %v", err)
	}
	_, err = p.Call(ctx, "get_weather", nil)
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_UNKNOWN_METHOD {
		t.Errorf("unknown method: %v", err)
	}
}

func TestRefusesToRunByHand(t *testing.T) {
	bin := plugintest.Build(t, "github.com/agenthost/agenthost/plugins/clock")
	stdout, stderr, code := plugintest.RunByHand(t, bin)
	if code != 1 || stdout != "" || !strings.Contains(stderr, sdk.RefusalMessage) {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// BenchmarkStart measures starting the clock plugin the way the host does
// (process start, handshake, dispense) up to the first answered call, with
// and without go-plugin's AutoMTLS.
func BenchmarkStart(b *testing.B) {
	bin := plugintest.Build(b, "github.com/agenthost/agenthost/plugins/clock")
	for _, mtls := range []bool{false, true} {
		name := "mtls=off"
		if mtls {
			name = "mtls=on"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p := plugintest.Start(b, bin, plugintest.Options{AutoMTLS: mtls})
				if _, err := p.Describe(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				p.GoPlugin.Kill()
				b.StartTimer()
			}
		})
	}
}
