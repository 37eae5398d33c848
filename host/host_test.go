package host

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type staticProvider struct {
	id     string
	schema string
}

func (p staticProvider) ID() string { return p.id }
func (p staticProvider) Services() []services.Service {
	return []services.Service{{Name: p.id + "_hello", Description: "says hello", Parameters: json.RawMessage(p.schema)}}
}
func (p staticProvider) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"hello"`), nil
}

func registers(sim *voicetest.Server) int { return len(sim.Registers()) }

// The host registers once per connection and once per real change of the
// service set, and leaves no goroutine behind when it stops.
func TestRegisterOncePerChangeAndCleanStop(t *testing.T) {
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	cfg := config.Default()
	cfg.Server.Address = sim.Addr()
	cfg.Server.Token = "tok"
	cfg.Server.Reconnect.Base, cfg.Server.Reconnect.Cap = config.Duration(10*time.Millisecond), config.Duration(50*time.Millisecond)
	cfg.Plugins.RuntimeDir = t.TempDir()
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	wait := func(what string, cond func() bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := sim.WaitFor(wctx, cond); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wait("first register", func() bool { return registers(sim) == 1 })
	builtins := len(sim.Services()) // get_current_time and the device's

	if err := h.Registry().Put(staticProvider{"a", `{"type":"object"}`}); err != nil {
		t.Fatal(err)
	}
	wait("register after a new provider", func() bool { return registers(sim) == 2 })
	if _, ok := sim.Services()["a_hello"]; !ok {
		t.Fatalf("services %v", sim.Services())
	}
	// The same set again, with other whitespace: no register.
	if err := h.Registry().Put(staticProvider{"a", `{ "type" : "object" }`}); err != nil {
		t.Fatal(err)
	}
	h.Registry().Remove("b-never-added")
	// A real change after the no-ops proves they sent nothing in between.
	h.Registry().Remove("a")
	wait("register after the removal", func() bool { return registers(sim) >= 3 })
	if n := registers(sim); n != 3 {
		t.Fatalf("%d registers, want 3", n)
	}
	if _, ok := sim.Services()["a_hello"]; ok || len(sim.Services()) != builtins {
		t.Fatalf("services after removal %v", sim.Services())
	}
	// A reconnect registers the whole set once more.
	sim.Drop()
	wait("register on the new connection", func() bool { return registers(sim) == 4 && len(sim.Auths()) == 2 })

	out, err := sim.Call(ctxT(t), "get_current_time", map[string]string{"format": "simple"})
	if err != nil || !out.Success {
		t.Fatalf("%+v %v", out, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := h.Status(); st.Connected {
		t.Fatalf("still connected after Run returned: %+v", st)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSayTextRefusesEmptyAndStripsMarkers(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.RuntimeDir = filepath.Join(t.TempDir(), "run")
	cfg.Audio.Backend = "none"
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.SayText(ctxT(t), "  "); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatal(err)
	}
	if h.Conversation() == nil {
		t.Fatal("no conversation")
	}
	if _, err := h.SayText(ctxT(t), "hi"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("a text turn without a connection: %v", err)
	}
	if id := voice.NewTaskID(); len(id) != voice.TaskLen {
		t.Fatalf("task id %q", id)
	}
}

// failing is a component that fails, before or after saying it is ready.
type failing struct{ afterReady bool }

func (failing) Name() string { return "failing" }
func (f failing) Run(ctx context.Context, ready func()) error {
	if f.afterReady {
		ready()
	}
	return errors.New("deliberate failure")
}

func TestAComponentFailureEndsRun(t *testing.T) {
	for _, after := range []bool{false, true} {
		sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
		cfg.Plugins.RuntimeDir = t.TempDir()
		h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
		if err != nil {
			t.Fatal(err)
		}
		h.Add(failing{afterReady: after})
		done := make(chan error, 1)
		go func() { done <- h.Run(context.Background()) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "failing: deliberate failure") {
				t.Fatalf("after ready=%v: Run returned %v", after, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("after ready=%v: Run did not return after its component failed", after)
		}
		sim.Close()
	}
}

// TestAStateFolderOfAnotherUserIsRefused: the host does not keep its state
// (the device's mutes and timers, the plugins' data) in a folder that
// another user owns or any user may write to: that user could put their
// own state there. As root, with a folder owned by nobody (65534).
func TestAStateFolderOfAnotherUserIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give a folder to another user")
	}
	for _, tc := range []struct {
		perm  os.FileMode
		owner int
		want  string
	}{{0o700, 65534, "belongs to user id 65534"}, {0o777, 0, "0777"}} {
		cfg := config.Default()
		cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
		os.Chown(cfg.Plugins.StateDir, tc.owner, tc.owner)
		os.Chmod(cfg.Plugins.StateDir, tc.perm)
		_, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), cfg.Plugins.StateDir) {
			t.Errorf("state folder of user %d, mode %04o: err = %v", tc.owner, tc.perm, err)
		}
	}
}

// TestTheLiveSettingsAreThoseThePartsName: the settings a reload applies at
// once are the ones the parts name (part.Live), the same as before the
// daemon was split into parts; any other waits for a restart. The wake
// word's settings are live only while its detector runs: one that is off
// (no models, or no microphone) starts only with the daemon.
func TestTheLiveSettingsAreThoseThePartsName(t *testing.T) {
	wake := []string{"conversation.wake_word.models", "conversation.wake_word.threshold", "conversation.wake_word.dir", "conversation.wake_word.onnxruntime",
		"conversation.wake_word.step", "conversation.wake_word.over", "conversation.wake_word.gate", "conversation.wake_word.per_model.hey_jarvis.over"}
	for _, tc := range []struct {
		backend string
		models  []string
		live    bool
	}{{"none", nil, false}, {"none", []string{"hey_jarvis"}, false}, {"file", nil, false}, {"file", []string{"hey_jarvis"}, true}} {
		cfg := config.Default()
		cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
		cfg.Audio.Backend, cfg.Conversation.WakeWord.Models = tc.backend, tc.models
		h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range wake {
			if h.isLive(key) != tc.live {
				t.Errorf("audio.backend %s, wake word models %v: %s is live: %v, want %v", tc.backend, tc.models, key, !tc.live, tc.live)
			}
		}
		if d := h.talk.Detector(); d != nil { // never started: a run that ends at once stops its supervisor
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			d.Run(ctx, func() {})
		}
	}

	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	cfg.Audio.Backend = "none"
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"log.level", "server.address", "server.params.mode", "server.params.input_audio_format", "server.params.format", "services.timeout", "services.prefixes.clock",
		"plugins.config.clock", "plugins.sha256", "conversation.hooks.turn_start",
		"mcp.servers.x.command", "mcp.servers_file", "audio.input", "audio.output", "audio.input_file", "audio.output_file",
		"audio.retry.base", "audio.pace", "audio.capture.echo_cancel", "audio.echo_room.delay", "audio.mix.duck_db", "audio.mix.keep_fed",
		"plugins.audio.deny", "plugins.audio.max_streams", "plugins.network.allow"} {
		if !h.isLive(key) {
			t.Errorf("%s is not live", key)
		}
	}
	for _, key := range []string{"audio.backend", "audio.rate", "metrics.listen", "plugins.dirs", "conversation.wake_word.pre_roll",
		"conversation.gpio.chip", "device.volume", "mcp.serve.listen", "log.format", "servers", "audio.input_files",
		"audio.output_rate", "audio.output_channels"} {
		if h.isLive(key) {
			t.Errorf("%s is live", key)
		}
	}
}

// TestMixSettingsApplyOnReload: a reload (SIGHUP, systemctl reload) that
// changes audio.mix.* turns media down by the new policy at once, with no
// restart asked for.
func TestMixSettingsApplyOnReload(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	cfg.Audio.Backend = "none"
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := h.speaker.Output()
	s, err := m.Open("music", mixer.Media, audio.Format{Rate: 16000, Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	m.SetActive(true) // a turn
	if st := m.Status(); !st[0].Ducked {
		t.Fatalf("media during a turn: %+v, want ducked", st[0])
	}
	next := *cfg
	next.Audio.Mix.MediaWhileActive, next.Audio.Mix.DuckDB, next.Audio.Mix.Ramp = "pause", -30, config.Duration(50*time.Millisecond)
	next.Audio.Mix.KeepFed = config.Duration(40 * time.Millisecond)
	if later := h.Apply(&next); len(later) != 0 {
		t.Errorf("the reload asks a restart for %v", later)
	}
	if st := m.Status(); !st[0].Paused {
		t.Errorf("media during a turn after the reload to media_while_active: pause: %+v, want paused", st[0])
	}
	if o := m.Options(); o.DuckDB != -30 || o.Ramp != 50*time.Millisecond {
		t.Errorf("after the reload the mixer ducks by %g dB over %s, want -30 dB over 50ms", o.DuckDB, o.Ramp)
	}
}
