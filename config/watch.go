package config

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long the folder must be quiet before the file is
// looked at again.
var watchDebounce = 250 * time.Millisecond

// FileWatcher reports changes of one file's content. It watches the file's
// folder, not the file, so editors that write a new file and rename it,
// and symlink swaps, are seen.
type FileWatcher struct {
	abs  string
	w    *fsnotify.Watcher
	last [32]byte
}

// WatchFile starts watching the file at path: a change from the moment it
// returns is reported by Run. It fails only if the watch cannot be set up.
func WatchFile(path string) (*FileWatcher, error) {
	if path == "" {
		return nil, errors.New("config: watch: no config file to watch")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: watch %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config: watch %s: %w", path, err)
	}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		w.Close()
		return nil, fmt.Errorf("config: watch %s: %w", filepath.Dir(abs), err)
	}
	fw := &FileWatcher{abs: abs, w: w}
	fw.last, _ = fileSum(abs)
	return fw, nil
}

// Run calls onChange each time the file's content changes, until ctx is
// done, then stops watching. Events are debounced and onChange runs only
// when the content really differs from what it was (not when the file is
// missing), on Run's goroutine, one call at a time.
func (fw *FileWatcher) Run(ctx context.Context, onChange func()) {
	defer fw.w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-fw.w.Events:
			if !ok {
				return
			}
			timer.Reset(watchDebounce)
		case _, ok := <-fw.w.Errors:
			if !ok {
				return
			}
			// Most likely an event overflow: look at the file anyway.
			timer.Reset(watchDebounce)
		case <-timer.C:
			sum, ok := fileSum(fw.abs)
			if ok && sum != fw.last {
				fw.last = sum
				onChange()
			}
		}
	}
}

func fileSum(path string) ([32]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}, false
	}
	return sha256.Sum256(b), true
}
