package host

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// simHost is a host running against the simulator.
type simHost struct {
	*Host
	sim  *voicetest.Server
	cfg  *config.Config
	stop func() // ends the host early (and waits for it)
}

// runSimHost runs the simulator (so) and a host against it until the
// test ends: the default configuration with the simulator as its server,
// a quick reconnect, its folders in a temporary one and no audio, then
// edit's changes (dir is that folder).
func runSimHost(t *testing.T, so voicetest.Options, edit func(cfg *config.Config, dir string)) simHost {
	t.Helper()
	sim, err := voicetest.NewServer(so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() }) // after the host's stop, registered below
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
	cfg.Server.Reconnect.Base, cfg.Server.Reconnect.Cap = config.Duration(10*time.Millisecond), config.Duration(50*time.Millisecond)
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = filepath.Join(dir, "run"), filepath.Join(dir, "state")
	cfg.Audio.Backend = "none"
	if edit != nil {
		edit(cfg, dir)
	}
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return simHost{h, sim, cfg, stop}
}

// waitSim waits (10 s at most) until cond holds of what the simulator
// saw, or fails the test naming what.
func waitSim(t *testing.T, sim *voicetest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sim.WaitFor(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
