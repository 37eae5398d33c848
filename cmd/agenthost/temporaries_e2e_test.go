package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestNoTemporaryOfACrashOutlivesTheNextStart: what a daemon (or an
// enroll) killed mid-write leaves, however young — the temporaries of the
// device state and the timers, of the plugin description cache, of an
// owner's verifier, and a plugin process's socket folder with what it put
// in its TMPDIR — is gone once the next daemon has started; a temporary
// that a writer holds now (an enroll saving its verifier) is left to it.
func TestNoTemporaryOfACrashOutlivesTheNextStart(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	dir := t.TempDir()
	state, run := filepath.Join(dir, "state"), filepath.Join(dir, "run")
	left := []string{
		filepath.Join(state, "device", ".state.json-123.tmp"),
		filepath.Join(state, "device", ".timers.json-456.tmp"),
		filepath.Join(state, "plugin-descriptions", ".media-789.tmp"),
		filepath.Join(state, "plugin-descriptions", ".media-"+strings.Repeat("ab", 32)+".json-1.tmp"),
		filepath.Join(state, "wakeword", ".hey_jarvis.verifier.json-42.tmp"),
		filepath.Join(run, "p", "zz", "scratch"),
	}
	for _, p := range left {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"half":`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A writer at work holds its temporary locked until it renames it.
	held := filepath.Join(state, "wakeword", ".alexa.verifier.json-7.tmp")
	f, err := os.OpenFile(held, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	d := startHost(t, sim, "plugins.state_dir="+state, "plugins.runtime_dir="+run, "services.builtins=true")
	ready(t, sim, 1)
	d.logShows("agenthost started")
	for _, p := range left {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s outlived the start", p)
		}
	}
	if _, err := os.Stat(filepath.Join(run, "plugins", "zz")); err == nil {
		t.Error("a socket folder of the crashed daemon outlived the start")
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("the temporary a writer holds was removed: %v", err)
	}
}
