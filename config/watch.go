package config

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long the file must be quiet before it is looked at
// again.
var watchDebounce = 250 * time.Millisecond

// FileWatcher reports changes of one file's content. It watches the file's
// folder, not the file, so editors that write a new file and rename it,
// and symlink swaps, are seen. Only events for the file's own name (and the
// name in the folder its symlink leads through) count: a log file beside it
// that changes all the time does not hold the debounce back.
type FileWatcher struct {
	abs   string
	w     *fsnotify.Watcher
	last  [32]byte
	names map[string]bool // the names in the folder whose events count
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
	fw.names = namesFor(abs)
	return fw, nil
}

// namesFor returns the names in the folder of abs whose changes can change
// what abs reads: its own, and where it is a symlink into the same folder
// (a Kubernetes ConfigMap's "..data/agenthost.yaml"), the first name of the
// link's target.
func namesFor(abs string) map[string]bool {
	dir := filepath.Dir(abs)
	names := map[string]bool{filepath.Base(abs): true}
	target, err := os.Readlink(abs)
	if err != nil {
		return names
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	rel, err := filepath.Rel(dir, target)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		names[strings.SplitN(rel, string(filepath.Separator), 2)[0]] = true
	}
	return names
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
		case ev, ok := <-fw.w.Events:
			if !ok {
				return
			}
			if fw.names[filepath.Base(ev.Name)] {
				timer.Reset(watchDebounce)
			}
		case _, ok := <-fw.w.Errors:
			if !ok {
				return
			}
			// Most likely an event overflow: look at the file anyway.
			timer.Reset(watchDebounce)
		case <-timer.C:
			fw.names = namesFor(fw.abs) // a swapped symlink may lead elsewhere now
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
