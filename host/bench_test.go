package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkHostPluginCall runs the host in this process (so that
// -cpuprofile sees its work) with the clock plugin, and calls
// get_current_time from the simulator: the path to profile.
//
//	go test -run='^$' -bench=HostPluginCall -benchtime=5000x -cpuprofile=/tmp/cpu.out ./host/
//	go tool pprof -top -nodecount=40 /tmp/cpu.out
func BenchmarkHostPluginCall(b *testing.B) {
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	dir := filepath.Join(b.TempDir(), "plugins")
	os.Mkdir(dir, 0o755)
	clock, err := os.ReadFile(testbin.Build(b, "./plugins/clock"))
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "clock"), clock, 0o755)
	cfg := config.Default()
	cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir, cfg.Plugins.Dirs = b.TempDir(), b.TempDir(), []string{dir}
	cfg.Services.Builtins = false
	cfg.Audio.Backend = "none" // the call path only: no microphone or speaker beside it
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := runHost(b, h, sim, func(context.Context) bool { return true })
	params := json.RawMessage(`{"format":"simple"}`)
	for range 200 {
		sim.Call(ctx, "get_current_time", params)
	}
	for b.Loop() {
		if out, err := sim.Call(ctx, "get_current_time", params); err != nil || !out.Success {
			b.Fatalf("%+v %v", out, err)
		}
	}
}

// BenchmarkHostStreaming runs the host in this process with the file audio
// backend and streams the microphone (push-to-talk) for 10 s per iteration:
// the path to profile for the CPU that streaming costs.
//
//	go test -run='^$' -bench=HostStreaming -benchtime=1x -cpuprofile=/tmp/cpu.out ./host/
func BenchmarkHostStreaming(b *testing.B) {
	for _, codec := range []string{"pcm", "opus"} {
		b.Run(codec, func(b *testing.B) {
			sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond, Faults: voicetest.Faults{WithholdReplies: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer sim.Close()
			mic := filepath.Join(b.TempDir(), "mic.s16")
			tone := make([]byte, 2*16000*3)
			for i := range tone {
				tone[i] = byte(i * 7)
			}
			os.WriteFile(mic, tone, 0o644)
			cfg := config.Default()
			cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
			cfg.Server.Params.InputAudioFormat = codec
			cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = b.TempDir(), b.TempDir()
			cfg.Audio.Backend, cfg.Audio.InputFile = "file", mic
			conv := runConversation(b, cfg, sim)
			for {
				if _, err := conv.TalkStart(); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			for b.Loop() {
				time.Sleep(10 * time.Second)
			}
			conv.TalkStop()
		})
	}
}

// BenchmarkHostIdle runs the host in this process with the file audio
// backend, echo cancellation and noise suppression on, linked to the
// simulator, for 10 s per iteration, nobody talking: the path to profile
// for what an idle speaker costs (the wake word's detector, a process of
// its own, is not in it).
//
//	go test -run='^$' -bench=HostIdle -benchtime=2x -cpuprofile=/tmp/cpu.out ./host/
func BenchmarkHostIdle(b *testing.B) {
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	mic := filepath.Join(b.TempDir(), "mic.s16")
	os.WriteFile(mic, make([]byte, 2*16000*60), 0o644)
	cfg := config.Default()
	cfg.Server.Address, cfg.Server.Token = sim.Addr(), "tok"
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = b.TempDir(), b.TempDir()
	cfg.Audio.Backend, cfg.Audio.InputFile, cfg.Audio.OutputFile = "file", mic, filepath.Join(b.TempDir(), "out.wav")
	cfg.Audio.Capture.EchoCancel, cfg.Audio.Capture.NoiseSuppression = true, true
	runConversation(b, cfg, sim)
	for b.Loop() {
		time.Sleep(10 * time.Second)
	}
}

// runHost runs h until the benchmark ends and waits until the simulator
// has its register and ready says yes. The context it returns ends with h.
func runHost(b *testing.B, h *Host, sim *voicetest.Server, ready func(context.Context) bool) context.Context {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := sim.WaitFor(wctx, func() bool { return len(sim.Registers()) > 0 && ready(wctx) }); err != nil {
		b.Fatal(err)
	}
	return ctx
}

// runConversation runs a host of cfg, linked to sim, with its conversation,
// until the conversation's devices are up; the benchmark's cleanup stops it.
func runConversation(b *testing.B, cfg *config.Config, sim *voicetest.Server) *conversation.Conversation {
	b.Helper()
	h, err := New(cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		b.Fatal(err)
	}
	conv := h.Conversation()
	runHost(b, h, sim, func(ctx context.Context) bool { return conv.Check(ctx) == nil })
	return conv
}
