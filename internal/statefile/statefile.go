// Package statefile keeps a small JSON document in the state folder the
// way the files plugin keeps its files: written whole to a temporary file
// beside it, synced, and renamed over the old one, so a crash or a full
// disk leaves either the old document or the new one, never half of
// either. A document that cannot be read back is set aside under another
// name (and said so), never a reason for the daemon not to start; the
// temporaries a writer killed mid-write left behind are removed when the
// document is read, and by Sweep at the daemon's start.
package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"time"
)

// MaxSize bounds a document read back (a state file is small; a huge one
// is not ours).
const MaxSize = 4 << 20

// Write stores v as JSON at path (mode 0600), atomically. The folder is
// made (0700) when missing. The temporary is locked (flock) from its
// creation to its rename: Sweep and Read remove only one no writer holds.
func Write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	err = write(dir, path, b)
	if errors.Is(err, fs.ErrNotExist) {
		// A start's sweep took the temporary between its creation and its
		// lock: once more.
		err = write(dir, path, b)
	}
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { // best effort: the rename is durable
		d.Sync()
		d.Close()
	}
	return nil
}

// write puts b in a locked temporary in dir and renames it to path.
func write(dir, path string, b []byte) error {
	tmp, err := os.CreateTemp(dir, temporary(path))
	if err != nil {
		return err
	}
	err = syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX)
	if err == nil {
		_, err = tmp.Write(b)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path) // while locked: a sweep cannot take it
	}
	tmp.Close()
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// temporary is Write's pattern for path's temporaries.
func temporary(path string) string { return "." + filepath.Base(path) + "-*.tmp" }

// Sweep removes, best effort, the temporaries in dir that no writer holds:
// every regular file named .*.tmp, whatever wrote it (Write, or an earlier
// version's writer) and however young, since a writer holds its own
// locked until it is renamed. dir must be a folder only the daemon's own
// writers write (a state folder of its own, not a plugin's).
func Sweep(dir string) { removeUnheld(dir, ".*.tmp") }

// removeUnheld removes the regular files in dir that match pattern and
// that no one holds locked.
func removeUnheld(dir, pattern string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(p) // unlocked with the file closed below
		}
		f.Close()
	}
}

// CorruptError says that a document could not be read and where it was put.
type CorruptError struct {
	Path     string // the document
	SetAside string // where it is now ("" when it could not be moved)
	Err      error
}

func (e *CorruptError) Error() string {
	if e.SetAside == "" {
		return fmt.Sprintf("%s cannot be read (%v) and could not be set aside", e.Path, e.Err)
	}
	return fmt.Sprintf("%s cannot be read (%v); it was set aside as %s", e.Path, e.Err, e.SetAside)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Read decodes the document at path into v. A missing document is not an
// error (found is false, v untouched). A document that is not valid JSON of
// v's shape, or larger than MaxSize, is renamed to
// path.corrupt-<time> and a *CorruptError returned; v is then untouched. v must be a pointer.
// Fields v does not have are ignored: a later version may have written
// them (the daemon was downgraded), and what this version knows still holds.
//
// Read also removes the document's temporaries that no writer holds (a
// writer killed mid-write left them): Read is how a document is loaded at
// start.
func Read(path string, v any) (found bool, err error) {
	removeUnheld(filepath.Dir(path), temporary(path))
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	f.Close()
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	var derr error
	if len(b) > MaxSize {
		derr = fmt.Errorf("larger than %d MiB", MaxSize>>20)
	} else {
		// Decode into a fresh value first: v stays as it was on failure.
		tmp := reflect.New(reflect.TypeOf(v).Elem())
		dec := json.NewDecoder(bytes.NewReader(b))
		if derr = dec.Decode(tmp.Interface()); derr == nil && dec.More() {
			derr = errors.New("data after the document")
		}
		if derr == nil {
			reflect.ValueOf(v).Elem().Set(tmp.Elem())
		}
	}
	if derr == nil {
		return true, nil
	}
	aside := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	if rerr := os.Rename(path, aside); rerr != nil {
		aside = ""
	}
	return false, &CorruptError{Path: path, SetAside: aside, Err: derr}
}
