package config

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	old := watchDebounce
	watchDebounce = 20 * time.Millisecond
	t.Cleanup(func() { watchDebounce = old })

	dir := t.TempDir()
	p := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(p, []byte("log: {level: info}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 10)
	fw, err := WatchFile(p)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { fw.Run(ctx, func() { changes <- struct{}{} }); close(done) }()

	expect := func(what string, want bool) {
		t.Helper()
		select {
		case <-changes:
			if !want {
				t.Errorf("%s: unexpected onChange", what)
			}
		case <-time.After(time.Second):
			if want {
				t.Errorf("%s: no onChange", what)
			}
		}
	}
	// Written at once: WatchFile has set the watch up when it returns.
	os.WriteFile(p, []byte("log: {level: debug}\n"), 0o600)
	expect("write", true)

	os.WriteFile(p, []byte("log: {level: debug}\n"), 0o600)
	expect("same content", false)

	tmp := filepath.Join(dir, ".agenthost.yaml.tmp")
	os.WriteFile(tmp, []byte("log: {level: warn}\n"), 0o600)
	os.Rename(tmp, p)
	expect("rename over", true)

	os.WriteFile(filepath.Join(dir, "other"), []byte("x"), 0o600)
	expect("other file", false)

	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// watching sets the debounce to d and watches path until the test ends;
// each change reported comes on the channel.
func watching(t *testing.T, path string, d time.Duration) <-chan struct{} {
	t.Helper()
	old := watchDebounce
	watchDebounce = d
	fw, err := WatchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() { fw.Run(ctx, func() { changes <- struct{}{} }); close(done) }()
	t.Cleanup(func() { cancel(); <-done; watchDebounce = old })
	return changes
}

func TestWatchErrors(t *testing.T) {
	if _, err := WatchFile(""); err == nil {
		t.Error("want an error for no path")
	}
	if _, err := WatchFile("/nonexistent-dir/x.yaml"); err == nil {
		t.Error("want an error for a missing folder")
	}
}

// TestWatchSeesAnEditBesideABusyFile: another file in the same folder that
// changes more often than the debounce (a log, audio.output_file) does not
// hold back the report of an edit of the watched file.
func TestWatchSeesAnEditBesideABusyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(p, []byte("log: {level: info}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	changes := watching(t, p, 300*time.Millisecond)

	// The busy neighbour: written every few milliseconds, far more often
	// than the debounce, until the test ends.
	stop := make(chan struct{})
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		f, err := os.Create(filepath.Join(dir, "agenthost.log"))
		if err != nil {
			return
		}
		defer f.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				f.WriteString("a log line\n")
			}
		}
	}()
	defer func() { close(stop); <-busy }()

	os.WriteFile(p, []byte("log: {level: debug}\n"), 0o600)
	select {
	case <-changes:
	case <-time.After(20 * time.Second):
		t.Fatal("the edit was never reported while another file in the folder kept changing")
	}
}

// TestWatchFollowsASymlinkSwap: a file that is a symlink through another
// name in the folder (a Kubernetes ConfigMap: agenthost.yaml ->
// ..data/agenthost.yaml, ..data -> ..v1, swapped by renaming a new link over
// ..data) is reported when the swap changes what it reads.
func TestWatchFollowsASymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	for v, level := range map[string]string{"..v1": "info", "..v2": "debug"} {
		os.Mkdir(filepath.Join(dir, v), 0o700)
		if err := os.WriteFile(filepath.Join(dir, v, "agenthost.yaml"), []byte("log: {level: "+level+"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agenthost.yaml")
	if err := os.Symlink("..data/agenthost.yaml", p); err != nil {
		t.Fatal(err)
	}
	changes := watching(t, p, 20*time.Millisecond)

	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(20 * time.Second):
		t.Fatal("the symlink swap was not reported")
	}
}
