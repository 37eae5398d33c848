package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

var fixed = time.Date(2025, 1, 22, 6, 30, 25, 0, time.UTC) // 14:30:25 in Shanghai

func testClock(t *testing.T, tz string) *clock {
	t.Helper()
	c := newClock()
	c.now = func() time.Time { return fixed }
	cfg, _ := json.Marshal(Config{Timezone: tz})
	if err := c.configure(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSimpleMatchesSeed(t *testing.T) {
	c := testClock(t, "Asia/Shanghai")
	for _, params := range []string{`{"format":"simple"}`, `{}`} {
		got, err := c.getCurrentTime(context.Background(), sdk.MustParams(params))
		if err != nil {
			t.Fatal(err)
		}
		if got != "2025-01-22 14:30:25" {
			t.Errorf("%s: got %q, want the seed's %q", params, got, "2025-01-22 14:30:25")
		}
	}
}

func TestDetailed(t *testing.T) {
	c := testClock(t, "Asia/Shanghai")
	got, err := c.getCurrentTime(context.Background(), sdk.MustParams(`{"format":"detailed"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "Wednesday, 22 January 2025, 14:30:25 CST (UTC+08:00, Asia/Shanghai), ISO week 4"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	c = testClock(t, "UTC")
	got, _ = c.getCurrentTime(context.Background(), sdk.MustParams(`{"format":"detailed"}`))
	if got != "Wednesday, 22 January 2025, 06:30:25 UTC (UTC+00:00), ISO week 4" {
		t.Errorf("UTC: got %q", got)
	}
}

func TestConfigure(t *testing.T) {
	c := newClock()
	for _, cfg := range []string{`{}`, `{"timezone":""}`, `{"timezone":"Local"}`, `{"timezone":"Europe/Berlin"}`} {
		if err := c.configure(json.RawMessage(cfg)); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
	if c.loc.Load().String() != "Europe/Berlin" {
		t.Errorf("zone = %s", c.loc.Load())
	}
	for cfg, want := range map[string]string{
		`{"timezone":"Mars/Olympus"}`: `timezone "Mars/Olympus" is not a known IANA time zone`,
		`{"timezon":"UTC"}`:           `unknown option "timezon"`,
		`{"timezone":5}`:              `option "timezone": want string, got number`,
	} {
		err := c.configure(json.RawMessage(cfg))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", cfg, err, want)
		}
	}
	if c.loc.Load().String() != "Europe/Berlin" {
		t.Errorf("a rejected config changed the zone to %s", c.loc.Load())
	}
}

// The service must look to the voice server exactly as in the seed.
func TestDescriptionMatchesSeed(t *testing.T) {
	local, err := sdk.Local(newClock().plugin())
	if err != nil {
		t.Fatal(err)
	}
	d, err := local.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Services) != 1 || d.Services[0].Name != "get_current_time" {
		t.Fatalf("services = %+v", d.Services)
	}
	s := d.Services[0]
	if s.Description != "Retrieve current date and time" {
		t.Errorf("description = %q", s.Description)
	}
	const seed = `{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"],"description":"simple = short, detailed = full info"}}}`
	if string(s.Parameters) != seed {
		t.Errorf("parameters =\n%s\nwant\n%s", s.Parameters, seed)
	}
}

func TestInvalidFormatIsRejected(t *testing.T) {
	local, _ := sdk.Local(newClock().plugin())
	ctx := context.Background()
	if err := local.Configure(ctx, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	_, err := local.Call(ctx, "get_current_time", json.RawMessage(`{"format":"long"}`))
	ce, ok := pluginv1.AsCallError(err)
	if !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS || !strings.Contains(ce.Message, `"format"`) {
		t.Errorf("err = %#v", err)
	}
}
