package statefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/statefile"
)

type doc struct {
	Volume int      `json:"volume"`
	Names  []string `json:"names"`
}

func TestWriteAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	var d doc
	if found, err := statefile.Read(path, &d); found || err != nil {
		t.Fatalf("missing file: found %v, err %v", found, err)
	}
	if err := statefile.Write(path, doc{Volume: 40, Names: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if found, err := statefile.Read(path, &d); !found || err != nil || d.Volume != 40 || len(d.Names) != 1 {
		t.Fatalf("read back %+v, %v, %v", d, found, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}

// A corrupt document is set aside, reported, and leaves v as it was.
func TestCorruptIsSetAside(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      "{\"volume\": 4",
		"wrong shape":   `{"volume": "loud"}`,
		"two documents": `{"volume": 3} {"volume": 4}`,
		"too large":     `{"names":["` + strings.Repeat("x", statefile.MaxSize) + `"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			os.WriteFile(path, []byte(content), 0o600)
			d := doc{Volume: 7}
			found, err := statefile.Read(path, &d)
			var ce *statefile.CorruptError
			if found || !errors.As(err, &ce) || ce.SetAside == "" {
				t.Fatalf("found %v, err %v", found, err)
			}
			if d.Volume != 7 {
				t.Errorf("v changed to %+v", d)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the corrupt file is still at %s", path)
			}
			if b, err := os.ReadFile(ce.SetAside); err != nil || string(b) != content {
				t.Errorf("set aside as %s: %v", ce.SetAside, err)
			}
			if !strings.Contains(err.Error(), "set aside as "+ce.SetAside) {
				t.Errorf("message %q", err)
			}
		})
	}
}

// TestAFieldThisVersionDoesNotKnowIsIgnored: a document written by a later
// version (after a downgrade) is read for the fields this one knows; the
// rest is ignored, not a reason to set the whole document aside.
func TestAFieldThisVersionDoesNotKnowIsIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte(`{"volume": 3, "colour": "red", "names": ["a"]}`), 0o600)
	var d doc
	if found, err := statefile.Read(path, &d); !found || err != nil || d.Volume != 3 || len(d.Names) != 1 {
		t.Fatalf("found %v, err %v, read %+v", found, err, d)
	}
}

// TestStaleTemporariesAreRemovedAtStart: the temporary files of a writer
// killed between create and rename, however young, are removed when the
// document is read (at start); a temporary a writer holds now, and other
// files, are left. Sweep removes every temporary in the folder no writer
// holds.
func TestStaleTemporariesAreRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := statefile.Write(path, doc{Volume: 4}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, name := range []string{".state.json-123.tmp", ".state.json-456.tmp", ".other.json-1.tmp", "notes.tmp"} {
		os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600)
		os.Chtimes(filepath.Join(dir, name), old, old)
	}
	os.WriteFile(filepath.Join(dir, ".state.json-789.tmp"), []byte("{"), 0o600) // a writer killed just now
	held, err := os.OpenFile(filepath.Join(dir, ".state.json-999.tmp"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil { // a writer at work
		t.Fatal(err)
	}
	var d doc
	if found, err := statefile.Read(path, &d); !found || err != nil || d.Volume != 4 {
		t.Fatalf("found %v, err %v, read %+v", found, err, d)
	}
	names := func() string {
		var left []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			left = append(left, e.Name())
		}
		return strings.Join(left, " ")
	}
	if got, want := names(), ".other.json-1.tmp .state.json-999.tmp notes.tmp state.json"; got != want {
		t.Fatalf("left %s, want %s", got, want)
	}
	statefile.Sweep(dir)
	if got, want := names(), ".state.json-999.tmp notes.tmp state.json"; got != want {
		t.Fatalf("after Sweep left %s, want %s", got, want)
	}
}
