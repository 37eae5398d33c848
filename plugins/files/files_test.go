package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/plugins/sdk"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// newTestFiles returns a configured plugin working in a fresh folder.
func newTestFiles(t *testing.T, cfg string) (*files, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	f := &files{}
	var m map[string]any
	if err := json.Unmarshal([]byte(cfg), &m); err != nil {
		t.Fatal(err)
	}
	m["root"] = root
	raw, _ := json.Marshal(m)
	if err := f.configure(raw); err != nil {
		t.Fatal(err)
	}
	return f, root
}

type handler func(context.Context, sdk.Params) (any, error)

func call(t *testing.T, h handler, params string) (any, error) {
	t.Helper()
	return h(context.Background(), sdk.MustParams(params))
}

func mustOK(t *testing.T, h handler, params string) any {
	t.Helper()
	v, err := call(t, h, params)
	if err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	return v
}

func wantErr(t *testing.T, h handler, params, want string) {
	t.Helper()
	v, err := call(t, h, params)
	if err == nil {
		t.Errorf("%s: got %v, want an error containing %q", params, v, want)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: err %q, want it to contain %q", params, err, want)
	}
}

func TestCreateAndRead(t *testing.T) {
	f, root := newTestFiles(t, `{}`)
	if got := mustOK(t, f.createFile, `{"filename":"notes.txt","content":"buy milk"}`); got != "Created notes.txt (8 bytes)" {
		t.Errorf("create: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(b) != "buy milk" {
		t.Errorf("on disk: %q", b)
	}
	if got := mustOK(t, f.readFile, `{"filename":"notes.txt"}`); got != "buy milk" {
		t.Errorf("read: %v", got)
	}
	// Sub-folders are created; names are cleaned.
	mustOK(t, f.createFile, `{"filename":"lists/./shopping.txt","content":"eggs"}`)
	if got := mustOK(t, f.readFile, `{"filename":"lists/shopping.txt"}`); got != "eggs" {
		t.Errorf("read nested: %v", got)
	}
	// An empty file is fine.
	mustOK(t, f.createFile, `{"filename":"empty","content":""}`)
	if got := mustOK(t, f.readFile, `{"filename":"empty"}`); got != "" {
		t.Errorf("read empty: %v", got)
	}
}

func TestNoOverwriteUnlessConfigured(t *testing.T) {
	f, root := newTestFiles(t, `{}`)
	mustOK(t, f.createFile, `{"filename":"a.txt","content":"one"}`)
	wantErr(t, f.createFile, `{"filename":"a.txt","content":"two"}`, `"a.txt" already exists, and overwriting files is turned off`)
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "one" {
		t.Errorf("file changed: %q", b)
	}
	os.Mkdir(filepath.Join(root, "dir"), 0o755)
	wantErr(t, f.createFile, `{"filename":"dir","content":"x"}`, `"dir" is a folder`)

	g, root2 := newTestFiles(t, `{"overwrite":true}`)
	mustOK(t, g.createFile, `{"filename":"a.txt","content":"a longer first version"}`)
	if got := mustOK(t, g.createFile, `{"filename":"a.txt","content":"two"}`); got != "Replaced a.txt (3 bytes)" {
		t.Errorf("overwrite: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root2, "a.txt")); string(b) != "two" {
		t.Errorf("after overwrite: %q", b)
	}
	// A replacement keeps the old file's mode.
	os.Chmod(filepath.Join(root2, "a.txt"), 0o604)
	mustOK(t, g.createFile, `{"filename":"a.txt","content":"three"}`)
	if st, err := os.Stat(filepath.Join(root2, "a.txt")); err != nil || st.Mode().Perm() != 0o604 {
		t.Errorf("mode after overwrite: %v %v, want 0604", st.Mode(), err)
	}
	if fifo := filepath.Join(root2, "fifo"); syscall.Mkfifo(fifo, 0o600) == nil {
		wantErr(t, g.createFile, `{"filename":"fifo","content":"x"}`, `"fifo" is not a regular file`)
	}
	os.Mkdir(filepath.Join(root2, "dir"), 0o755)
	wantErr(t, g.createFile, `{"filename":"dir","content":"x"}`, `"dir" is a folder`)
}

func TestConfinement(t *testing.T) {
	f, root := newTestFiles(t, `{}`)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600)
	os.Symlink(outside, filepath.Join(root, "escape"))                              // a link to a folder outside
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "secretlink")) // a link to a file outside
	os.Symlink("../../", filepath.Join(root, "up"))                                 // a relative link upwards
	os.Mkdir(filepath.Join(root, "in"), 0o755)
	os.WriteFile(filepath.Join(root, "in", "ok.txt"), []byte("fine"), 0o600)
	os.Symlink("in/ok.txt", filepath.Join(root, "goodlink")) // a link that stays inside

	for _, h := range []struct {
		name string
		h    handler
	}{{"create", f.createFile}, {"read", f.readFile}} {
		t.Run(h.name, func(t *testing.T) {
			wantErr(t, h.h, `{"filename":"/etc/passwd","content":"x"}`, "is an absolute path")
			wantErr(t, h.h, `{"filename":"../x","content":"x"}`, `contains ".."`)
			wantErr(t, h.h, `{"filename":"a/../../x","content":"x"}`, `contains ".."`)
			wantErr(t, h.h, `{"filename":"a/..","content":"x"}`, `contains ".."`)
			wantErr(t, h.h, `{"filename":"","content":"x"}`, "the filename is empty")
			wantErr(t, h.h, `{"filename":"a\u0000b","content":"x"}`, "NUL")
			wantErr(t, h.h, `{"filename":"escape/new.txt","content":"x"}`, "leads outside the files folder")
			wantErr(t, h.h, `{"filename":"up/x","content":"x"}`, "leads outside the files folder")
		})
	}
	wantErr(t, f.readFile, `{"filename":"secretlink"}`, "leads outside the files folder")
	wantErr(t, f.createFile, `{"filename":"secretlink","content":"x"}`, "already exists")
	wantErr(t, f.listFiles, `{"folder":"escape"}`, "leads outside the files folder")
	wantErr(t, f.listFiles, `{"folder":"/etc"}`, "is an absolute path")
	wantErr(t, f.listFiles, `{"folder":".."}`, `contains ".."`)
	f.cfg.Load().overwrite = true
	wantErr(t, f.createFile, `{"filename":"secretlink","content":"x"}`, "leads outside the files folder")
	if got := mustOK(t, f.readFile, `{"filename":"goodlink"}`); got != "fine" {
		t.Errorf("link inside: %v", got)
	}
	wantErr(t, f.createFile, `{"filename":"goodlink","content":"x"}`, `"goodlink" is a symbolic link; create_file does not replace links`)
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was created outside the root")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s3cret" {
		t.Error("the outside file changed")
	}
}

func TestSizeLimits(t *testing.T) {
	f, root := newTestFiles(t, `{"max_bytes":10}`)
	mustOK(t, f.createFile, `{"filename":"ten","content":"0123456789"}`)
	wantErr(t, f.createFile, `{"filename":"eleven","content":"0123456789a"}`, "the content is 11 bytes; the limit is 10 bytes")
	if _, err := os.Stat(filepath.Join(root, "eleven")); err == nil {
		t.Error("an oversized file was created")
	}
	os.WriteFile(filepath.Join(root, "big"), []byte(strings.Repeat("x", 11)), 0o600)
	wantErr(t, f.readFile, `{"filename":"big"}`, `"big" is 11 bytes; the limit for reading is 10 bytes`)
	os.WriteFile(filepath.Join(root, "bin"), []byte{0xff, 0xfe, 0}, 0o600)
	wantErr(t, f.readFile, `{"filename":"bin"}`, `"bin" is not a text file`)
	wantErr(t, f.readFile, `{"filename":"missing"}`, `there is no file or folder named "missing"`)
	os.Mkdir(filepath.Join(root, "d"), 0o755)
	wantErr(t, f.readFile, `{"filename":"d"}`, `"d" is a folder`)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err == nil {
		wantErr(t, f.readFile, `{"filename":"fifo"}`, "not a regular file") // must not block
		wantErr(t, f.createFile, `{"filename":"fifo","content":"x"}`, "already exists")
	}

	d, _ := newTestFiles(t, `{}`)
	if s := d.cfg.Load(); s.maxBytes != DefaultMaxBytes || DefaultMaxBytes != 1<<20 {
		t.Errorf("default max_bytes = %d", s.maxBytes)
	}
	if s := d.cfg.Load(); s.maxTotalBytes != 32<<20 || s.maxFiles != 1000 {
		t.Errorf("default quota = %d bytes, %d files; the README says 32 MiB and 1000", s.maxTotalBytes, s.maxFiles)
	}
}

func TestQuota(t *testing.T) {
	f, root := newTestFiles(t, `{"max_files":3,"max_total_bytes":10,"overwrite":true}`)
	mustOK(t, f.createFile, `{"filename":"a.txt","content":"12345"}`)
	wantErr(t, f.createFile, `{"filename":"b.txt","content":"123456"}`,
		"the files folder holds 5 bytes and this file would take it to 11, over the limit of 10 bytes; the owner can raise plugins.config.files.max_total_bytes in the host's config")
	if _, err := os.Stat(filepath.Join(root, "b.txt")); err == nil {
		t.Error("a file over the byte quota was created")
	}
	// A replacement counts the bytes it frees.
	mustOK(t, f.createFile, `{"filename":"a.txt","content":"1234567890"}`)
	// The file and each missing folder count.
	wantErr(t, f.createFile, `{"filename":"d/e/f.txt","content":""}`,
		"the files folder holds 1 files and folders and this file needs 3 more, over the limit of 3; the owner can raise plugins.config.files.max_files in the host's config")
	if _, err := os.Stat(filepath.Join(root, "d")); err == nil {
		t.Error("a folder was created for a file over the quota")
	}
	mustOK(t, f.createFile, `{"filename":"d/e.txt","content":""}`)
	wantErr(t, f.createFile, `{"filename":"d/g.txt","content":""}`, "holds 3 files and folders and this file needs 1 more, over the limit of 3")
	// At the limits, replacing an existing file still works, and so does
	// shrinking one when the folder is over a lowered quota.
	mustOK(t, f.createFile, `{"filename":"d/e.txt","content":""}`)
	f.cfg.Load().maxTotalBytes = 4
	wantErr(t, f.createFile, `{"filename":"a.txt","content":"12345678901"}`, "over the limit of 4 bytes")
	mustOK(t, f.createFile, `{"filename":"a.txt","content":"12"}`)
	// Files put there by other means count too, links and all.
	g, root2 := newTestFiles(t, `{"max_files":2}`)
	os.WriteFile(filepath.Join(root2, "x"), nil, 0o600)
	os.Symlink("x", filepath.Join(root2, "y"))
	wantErr(t, g.createFile, `{"filename":"z","content":""}`, "holds 2 files and folders")
}

func TestList(t *testing.T) {
	f, root := newTestFiles(t, `{}`)
	if got := mustOK(t, f.listFiles, `{}`).(Listing); got.Folder != "." || len(got.Entries) != 0 {
		t.Errorf("empty: %+v", got)
	}
	mustOK(t, f.createFile, `{"filename":"b.txt","content":"bb"}`)
	mustOK(t, f.createFile, `{"filename":"a/x.txt","content":"x"}`)
	os.Symlink("b.txt", filepath.Join(root, "c"))
	got, _ := json.Marshal(mustOK(t, f.listFiles, `{}`))
	if want := `{"folder":".","entries":[{"name":"a","type":"folder"},{"name":"b.txt","type":"file","size":2},{"name":"c","type":"link"}]}`; string(got) != want {
		t.Errorf("list:\n%s\nwant\n%s", got, want)
	}
	got, _ = json.Marshal(mustOK(t, f.listFiles, `{"folder":"a"}`))
	if want := `{"folder":"a","entries":[{"name":"x.txt","type":"file","size":1}]}`; string(got) != want {
		t.Errorf("list a: %s", got)
	}
	wantErr(t, f.listFiles, `{"folder":"b.txt"}`, `"b.txt" is a file, not a folder`)
	wantErr(t, f.listFiles, `{"folder":"nope"}`, `there is no file or folder named "nope"`)

	for i := range maxListEntries + 5 {
		os.WriteFile(filepath.Join(root, "a", "f"+strings.Repeat("0", 3)+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o600)
	}
	l := mustOK(t, f.listFiles, `{"folder":"a"}`).(Listing)
	if len(l.Entries) != maxListEntries || !l.Truncated {
		t.Errorf("long list: %d entries, truncated %v", len(l.Entries), l.Truncated)
	}
}

func TestConfigure(t *testing.T) {
	data := t.TempDir()
	f := &files{dataDir: data}
	if err := f.configure(json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.Load(); s.root != filepath.Join(data, "files") {
		t.Errorf("default root = %s", s.root)
	}
	if st, err := os.Stat(filepath.Join(data, "files")); err != nil || !st.IsDir() {
		t.Errorf("default root not created: %v", err)
	}
	for cfg, want := range map[string]string{
		`{"root":"relative/dir"}`: `root "relative/dir" must be an absolute path`,
		`{"max_bytes":-1}`:        "max_bytes -1 must not be negative",
		`{"max_total_bytes":-1}`:  "max_total_bytes -1 must not be negative",
		`{"max_files":-5}`:        "max_files -5 must not be negative",
		`{"max_file":5}`:          `unknown option "max_file"`,
		`{"max_files":"many"}`:    `option "max_files": want int64, got string`,
		`{"roots":"/x"}`:          `unknown option "roots"`,
		`{"overwrite":"yes"}`:     `option "overwrite": want bool, got string`,
	} {
		if err := f.configure(json.RawMessage(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if err := f.configure(json.RawMessage(`{"root":"` + file + `"}`)); err == nil {
		t.Error("a file as root was accepted")
	}
	if s := f.cfg.Load(); s.root != filepath.Join(data, "files") {
		t.Errorf("a rejected config changed the root to %s", s.root)
	}

	noData := &files{}
	if err := noData.configure(json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "root is not set") {
		t.Errorf("no root, no data dir: %v", err)
	}
}

func TestDescriptionMatchesSeed(t *testing.T) {
	local, err := sdk.Local((&files{}).plugin())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := local.Describe(context.Background())
	var names []string
	for _, s := range d.Services {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "create_file,read_file,list_files" {
		t.Fatalf("services: %v", names)
	}
	s := d.Services[0]
	const seed = `{"type":"object","properties":{"filename":{"type":"string","description":"Name of the file to create"},"content":{"type":"string","description":"Text to write into the file"}},"required":["filename","content"]}`
	if s.Description != "Create a local file and write content" || string(s.Parameters) != seed {
		t.Errorf("create_file = %q %s", s.Description, s.Parameters)
	}
	// The SDK enforces "required" before the handler runs.
	local.Configure(context.Background(), json.RawMessage(`{"root":"`+t.TempDir()+`"}`))
	_, err = local.Call(context.Background(), "create_file", json.RawMessage(`{"filename":"x"}`))
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS || !strings.Contains(ce.Message, "content") {
		t.Errorf("missing content: %v", err)
	}
}
