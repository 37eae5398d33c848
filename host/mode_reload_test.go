package host

import (
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
	h := runSimHost(t, voicetest.Options{DisconnectDelay: time.Millisecond}, func(cfg *config.Config, dir string) {
		mic := filepath.Join(dir, "mic.s16")
		if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
			t.Fatal(err)
		}
		cfg.Server.Params.Mode = "vad"
		cfg.Audio.Backend, cfg.Audio.InputFile = "file", mic
	})
	sim, cfg := h.sim, h.cfg
	wait := func(what string, cond func() bool) { t.Helper(); waitSim(t, sim, what, cond) }
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
