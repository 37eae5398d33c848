// Package statefile keeps a small JSON document in the state folder the
// way the files plugin keeps its files: written whole to a temporary file
// beside it, synced, and renamed over the old one, so a crash or a full
// disk leaves either the old document or the new one, never half of
// either. A document that cannot be read back is set aside under another
// name (and said so), never a reason for the daemon not to start; the
// temporaries a writer killed mid-write left behind are removed when the
// document is read.
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
	"time"
)

// MaxSize bounds a document read back (a state file is small; a huge one
// is not ours).
const MaxSize = 4 << 20

// Write stores v as JSON at path (mode 0600), atomically. The folder is
// made (0700) when missing.
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
	tmp, err := os.CreateTemp(dir, temporary(path))
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { // best effort: the rename is durable
		d.Sync()
		d.Close()
	}
	return nil
}

// StaleAfter is the age beyond which a temporary of Write's is a writer's
// that was killed between create and rename (a write takes milliseconds;
// a younger one may be another writer's, at work now).
const StaleAfter = time.Minute

// temporary is Write's pattern for path's temporaries.
func temporary(path string) string { return "." + filepath.Base(path) + "-*.tmp" }

// removeStale removes path's temporaries older than StaleAfter, best effort:
// only regular files of Write's pattern, in path's folder.
func removeStale(path string) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	pattern := temporary(path)
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > StaleAfter {
			os.Remove(filepath.Join(dir, e.Name()))
		}
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
// Read also removes the document's stale temporaries (see StaleAfter): Read
// is how a document is loaded at start.
func Read(path string, v any) (found bool, err error) {
	removeStale(path)
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
