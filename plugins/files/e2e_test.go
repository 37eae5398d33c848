package main

import (
	"context"
	"encoding/json"
	"errors"
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
	bin := plugintest.Build(t, "github.com/agenthost/agenthost/plugins/files")
	data := t.TempDir()
	p := plugintest.Start(t, bin, plugintest.Options{Env: []string{pluginv1.EnvDataDir + "=" + data}})
	ctx := context.Background()

	d, err := p.Describe(ctx)
	if err != nil || d.Name != "files" || len(d.Services) != 3 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	var cerr *pluginv1.ConfigError
	if err := p.Configure(ctx, json.RawMessage(`{"root":"here"}`)); !errors.As(err, &cerr) || !strings.Contains(cerr.Message, "must be an absolute path") {
		t.Errorf("relative root: %v", err)
	}
	if err := p.Configure(ctx, json.RawMessage(`{"max_bytes":100}`)); err != nil {
		t.Fatal(err)
	}

	data1, err := p.Call(ctx, "create_file", json.RawMessage(`{"filename":"todo/today.txt","content":"call mum"}`))
	if err != nil || string(data1) != `"Created todo/today.txt (8 bytes)"` {
		t.Fatalf("create: %s %v", data1, err)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "files", "todo", "today.txt")); string(b) != "call mum" {
		t.Errorf("on disk: %q", b)
	}
	if got, err := p.Call(ctx, "read_file", json.RawMessage(`{"filename":"todo/today.txt"}`)); err != nil || string(got) != `"call mum"` {
		t.Errorf("read: %s %v", got, err)
	}
	if got, err := p.Call(ctx, "list_files", nil); err != nil || string(got) != `{"folder":".","entries":[{"name":"todo","type":"folder"}]}` {
		t.Errorf("list: %s %v", got, err)
	}

	for params, want := range map[string]string{
		`{"filename":"todo/today.txt","content":"again"}`:                 "already exists",
		`{"filename":"/tmp/x","content":"x"}`:                             "absolute path",
		`{"filename":"../x","content":"x"}`:                               `contains ".."`,
		`{"filename":"big","content":"` + strings.Repeat("x", 101) + `"}`: "the limit is 100 bytes",
	} {
		_, err := p.Call(ctx, "create_file", json.RawMessage(params))
		if ce, ok := pluginv1.AsCallError(err); !ok || !strings.Contains(ce.Message, want) {
			t.Errorf("%.60s: %v, want an error result with %q", params, err, want)
		}
	}
}

func TestRefusesToRunByHand(t *testing.T) {
	stdout, stderr, code := plugintest.RunByHand(t, plugintest.Build(t, "github.com/agenthost/agenthost/plugins/files"))
	if code != 1 || stdout != "" || !strings.Contains(stderr, sdk.RefusalMessage) {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
