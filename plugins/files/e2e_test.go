package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// The quota's error results reach the caller through the real plugin.
func TestQuotaEndToEnd(t *testing.T) {
	bin := plugintest.Build(t, "github.com/agenthost/agenthost/plugins/files")
	root := filepath.Join(t.TempDir(), "files")
	p := plugintest.Configured(t, bin, `{"root":"`+root+`","max_files":2,"max_total_bytes":20}`, plugintest.Options{})
	ctx := context.Background()
	if got, err := p.Call(ctx, "create_file", json.RawMessage(`{"filename":"a.txt","content":"0123456789"}`)); err != nil {
		t.Fatalf("create: %s %v", got, err)
	}
	for params, want := range map[string]string{
		`{"filename":"b.txt","content":"0123456789a"}`: "over the limit of 20 bytes; the owner can raise plugins.config.files.max_total_bytes",
		`{"filename":"n/b.txt","content":""}`:          "over the limit of 2; the owner can raise plugins.config.files.max_files",
	} {
		_, err := p.Call(ctx, "create_file", json.RawMessage(params))
		if ce, ok := pluginv1.AsCallError(err); !ok || !strings.Contains(ce.Message, want) {
			t.Errorf("%s: %v, want an error result with %q", params, err, want)
		}
	}
	if names := dirNames(t, root); strings.Join(names, ",") != "a.txt" {
		t.Errorf("the folder holds %v, want only a.txt", names)
	}
}

// smallDisk mounts a tmpfs of size bytes for the test and returns its path;
// it is unmounted when the test ends. Mounting needs root.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("this test mounts a small tmpfs to fill a real disk, which needs root; run it as root (e.g. sudo go test)")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fill writes a file at name until the disk is full.
func fill(t *testing.T, name string) {
	t.Helper()
	fh, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := fh.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", name, err)
			}
			return
		}
	}
}

// Defect 6 of issue 11: an overwrite that does not fit on the disk must leave
// the old file as it was, and no temporary file behind.
func TestFullDiskKeepsOldContent(t *testing.T) {
	disk := smallDisk(t, 256<<10)
	root := filepath.Join(disk, "files")
	bin := plugintest.Build(t, "github.com/agenthost/agenthost/plugins/files")
	p := plugintest.Configured(t, bin, `{"root":"`+root+`","overwrite":true}`, plugintest.Options{})
	ctx := context.Background()

	if got, err := p.Call(ctx, "create_file", json.RawMessage(`{"filename":"notes.txt","content":"the old content"}`)); err != nil {
		t.Fatalf("create: %s %v", got, err)
	}
	fill(t, filepath.Join(disk, "filler")) // outside the plugin's folder, on the same disk
	big := strings.Repeat("x", 64<<10)
	got, err := p.Call(ctx, "create_file", json.RawMessage(`{"filename":"notes.txt","content":"`+big+`"}`))
	if ce, ok := pluginv1.AsCallError(err); !ok || !strings.Contains(ce.Message, "the disk is full") {
		t.Errorf("overwrite on a full disk: %.80s %v, want an error result saying the disk is full", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "notes.txt")); string(b) != "the old content" {
		t.Errorf("after the failed overwrite the file holds %d bytes (%.20q, %v), want the old content", len(b), b, err)
	}
	if names := dirNames(t, root); strings.Join(names, ",") != "notes.txt" {
		t.Errorf("the folder holds %v, want only notes.txt (no temporary file left)", names)
	}

	// A new file that does not fit leaves nothing behind either.
	if err := p.Configure(ctx, json.RawMessage(`{"root":"`+root+`"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(ctx, "create_file", json.RawMessage(`{"filename":"new.txt","content":"`+big+`"}`))
	if ce, ok := pluginv1.AsCallError(err); !ok || !strings.Contains(ce.Message, "the disk is full") {
		t.Errorf("new file on a full disk: %v, want an error result saying the disk is full", err)
	}
	if names := dirNames(t, root); strings.Join(names, ",") != "notes.txt" {
		t.Errorf("the folder holds %v, want only notes.txt (no partial new file)", names)
	}
	if err := p.Configure(ctx, json.RawMessage(`{"root":"`+root+`","overwrite":true}`)); err != nil {
		t.Fatal(err)
	}

	// With room again, the same overwrite succeeds.
	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	got, err = p.Call(ctx, "create_file", json.RawMessage(`{"filename":"notes.txt","content":"`+big+`"}`))
	if err != nil || string(got) != `"Replaced notes.txt (65536 bytes)"` {
		t.Errorf("overwrite with room: %s %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(b) != big {
		t.Errorf("after the overwrite the file holds %d bytes, want %d", len(b), len(big))
	}
	if names := dirNames(t, root); strings.Join(names, ",") != "notes.txt" {
		t.Errorf("the folder holds %v, want only notes.txt", names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestRefusesToRunByHand(t *testing.T) {
	stdout, stderr, code := plugintest.RunByHand(t, plugintest.Build(t, "github.com/agenthost/agenthost/plugins/files"))
	if code != 1 || stdout != "" || !strings.Contains(stderr, sdk.RefusalMessage) {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
