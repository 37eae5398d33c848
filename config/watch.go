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

// Watch calls onChange each time the content of the file at path changes,
// until ctx is done; then it returns nil. It watches the file's folder, not
// the file, so editors that write a new file and rename it, and symlink
// swaps, are seen; events are debounced and onChange runs only when the
// content really differs from what it was (not when the file is missing).
// onChange runs on Watch's goroutine, one call at a time. Watch returns an
// error only if the watch cannot be set up.
func Watch(ctx context.Context, path string, onChange func()) error {
	if path == "" {
		return errors.New("config: watch: no config file to watch")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("config: watch %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config: watch %s: %w", path, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("config: watch %s: %w", filepath.Dir(abs), err)
	}

	last, _ := fileSum(abs)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			timer.Reset(watchDebounce)
		case _, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Most likely an event overflow: look at the file anyway.
			timer.Reset(watchDebounce)
		case <-timer.C:
			sum, ok := fileSum(abs)
			if ok && sum != last {
				last = sum
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
