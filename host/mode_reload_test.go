package host

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestAReloadToManualStopsTheMicrophoneStreaming: server.params.mode is
// applied by a reload (the link reconnects with it), so a speaker moved
// from vad (which, without the wake word, streams the microphone whenever
// it is on) to manual (push-to-talk) must stop streaming: on the new
// connection no LISTEN cycle starts and no microphone audio is sent until
// a trigger.
func TestAReloadToManualStopsTheMicrophoneStreaming(t *testing.T) {
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	dir := t.TempDir()
	mic := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
	cfg.Server.Reconnect.Base, cfg.Server.Reconnect.Cap = config.Duration(10*time.Millisecond), config.Duration(50*time.Millisecond)
	cfg.Server.Params.Mode = "vad"
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = filepath.Join(dir, "run"), filepath.Join(dir, "state")
	cfg.Audio.Backend, cfg.Audio.InputFile = "file", mic
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := sim.WaitFor(wctx, cond); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	streamed := func(conn int) (listens, frames int) {
		for _, r := range sim.Received() {
			if r.Conn != conn {
				continue
			}
			switch r.Frame.Type {
			case voice.TypeAudio:
				frames++
			case voice.TypeListen:
				if l, err := voice.ParseListen(r.Frame.Payload); err == nil && l.State == voice.ListenStart {
					listens++
				}
			}
		}
		return listens, frames
	}
	wait("vad mode to stream the microphone", func() bool { _, n := streamed(1); return n >= 3 })

	next := *cfg
	next.Server.Params.Mode = "manual"
	h.Apply(&next)
	wait("the new connection", func() bool { return len(sim.Auths()) == 2 && sim.Open() == 1 })
	// A call answered on the new connection: whatever the host sent when
	// that connection came up (a LISTEN start, the first audio) is before
	// its result.
	if out, err := sim.Call(ctxT(t), "get_current_time", map[string]string{"format": "simple"}); err != nil || !out.Success {
		t.Fatalf("%+v %v", out, err)
	}
	if listens, frames := streamed(2); listens != 0 || frames != 0 {
		t.Fatalf("after the reload to server.params.mode: manual, the new connection got %d LISTEN starts and %d microphone frames, with no trigger", listens, frames)
	}
}
