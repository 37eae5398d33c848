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
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, p, func() { changes <- struct{}{} }) }()

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
	// Give the watcher time to be set up (Watch adds the folder at once,
	// but the goroutine may not have run yet).
	time.Sleep(100 * time.Millisecond)

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
	case err := <-done:
		if err != nil {
			t.Errorf("Watch returned %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
}

func TestWatchErrors(t *testing.T) {
	if err := Watch(context.Background(), "", func() {}); err == nil {
		t.Error("want an error for no path")
	}
	if err := Watch(context.Background(), "/nonexistent-dir/x.yaml", func() {}); err == nil {
		t.Error("want an error for a missing folder")
	}
}
