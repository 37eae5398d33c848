package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
	bin := plugintest.Build(t, "github.com/agenthost/agenthost/plugins/sysinfo")
	p := plugintest.Configured(t, bin, `{"disk_path":"`+t.TempDir()+`"}`, plugintest.Options{})
	ctx := context.Background()

	data, err := p.Call(ctx, "get_system_info", json.RawMessage(`{"fields":["hostname","temperature","disk"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hostname    string          `json:"hostname"`
		Temperature json.RawMessage `json:"temperature"`
		Disk        Disk            `json:"disk"`
		Uptime      *Uptime         `json:"uptime"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if host, _ := os.Hostname(); got.Hostname != host {
		t.Errorf("hostname %q, want %q", got.Hostname, host)
	}
	zones, _ := filepath.Glob("/sys/class/thermal/thermal_zone*/temp")
	if len(zones) == 0 && string(got.Temperature) != `"not reported"` {
		t.Errorf("temperature = %s on a machine without thermal zones", got.Temperature)
	}
	if got.Disk.TotalGB <= 0 || got.Uptime != nil {
		t.Errorf("disk %+v, uptime %+v (not asked for)", got.Disk, got.Uptime)
	}

	_, err = p.Call(ctx, "get_system_info", json.RawMessage(`{"fields":["weather"]}`))
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS {
		t.Errorf("unknown field: %v", err)
	}
}

func TestRefusesToRunByHand(t *testing.T) {
	stdout, stderr, code := plugintest.RunByHand(t, plugintest.Build(t, "github.com/agenthost/agenthost/plugins/sysinfo"))
	if code != 1 || stdout != "" || !strings.Contains(stderr, sdk.RefusalMessage) {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
