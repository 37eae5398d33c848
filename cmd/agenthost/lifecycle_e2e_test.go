package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestSIGTERMDuringAPluginStart: a stop signal while a plugin is still
// starting (this one never completes its handshake) ends the host promptly
// with status 0, and the half-started plugin does not outlive it.
func TestSIGTERMDuringAPluginStart(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) {
		script := "#!/bin/sh\nexec sleep 61.8034\n"
		if err := os.WriteFile(filepath.Join(dir, "slowstart"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}, "plugins.start_timeout=2m")
	d.logShows("starting plugin")
	if err := d.stop(); err != nil {
		t.Fatalf("exit after SIGTERM during start-up: %v", err)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 61.8034").Output(); strings.TrimSpace(string(out)) != "" {
		exec.Command("pkill", "-f", "sleep 61.8034").Run()
		t.Fatalf("the starting plugin outlived the host (pids %s)", out)
	}
}
