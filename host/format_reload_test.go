package host

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
	"github.com/agenthost/agenthost/proto/voice/voicetest/simopus"
)

// TestAReloadOfTheAudioFormatsReachesTheConversation:
// server.params.input_audio_format and server.params.format are applied
// by a reload (the link reconnects and sends them in AUTH), so after a
// reload from pcm to opus the microphone must reach the server as Opus
// that decodes to what was said, and the reply, now Opus, must play as
// the server's tone, not as Opus bytes taken for samples.
func TestAReloadOfTheAudioFormatsReachesTheConversation(t *testing.T) {
	const micHz, replyHz = 440.0, 880.0
	codec, err := simopus.New()
	if err != nil {
		t.Fatal(err)
	}
	var speaker string
	h := runSimHost(t, voicetest.Options{DisconnectDelay: time.Millisecond, Opus: codec,
		ToneHz: replyHz, ReplyDuration: 600 * time.Millisecond}, func(cfg *config.Config, dir string) {
		mic := filepath.Join(dir, "mic.s16")
		speaker = filepath.Join(dir, "out.wav")
		if err := audiotest.WriteRaw(mic, audiotest.Tone(micHz, 16000, time.Second)); err != nil {
			t.Fatal(err)
		}
		cfg.Server.Params.Mode, cfg.Server.Params.InputAudioFormat, cfg.Server.Params.Format = "manual", "pcm", "pcm"
		cfg.Audio.Backend, cfg.Audio.InputFile, cfg.Audio.OutputFile = "file", mic, speaker
		cfg.Audio.OutputRate, cfg.Audio.OutputChannels = 16000, 1
		cfg.Conversation.Earcons = config.Earcons{} // the speaker plays the reply alone
	})
	sim, cfg, stop := h.sim, h.cfg, h.stop
	wait := func(what string, cond func() bool) { t.Helper(); waitSim(t, sim, what, cond) }
	wait("the first connection", func() bool { return len(sim.Auths()) == 1 && sim.Open() == 1 })

	next := *cfg
	next.Server.Params.InputAudioFormat, next.Server.Params.Format = "opus", "opus"
	if later := h.Apply(&next); len(later) != 0 {
		t.Errorf("the reload asks a restart for %v", later)
	}
	wait("the new connection", func() bool { return len(sim.Auths()) == 2 && sim.Open() == 1 })
	if a := sim.Auths()[1]; a.Params == nil {
		t.Fatalf("AUTH of the new connection: %+v", a)
	}
	for _, k := range []string{"input_audio_format", "format"} {
		if v, _ := sim.Auths()[1].Get(k); v != "opus" {
			t.Fatalf("the new connection's AUTH has %s %q, want opus", k, v)
		}
	}

	// A call answered on the new connection: the conversation was told
	// of it (the link's handler hears Up before it reads a frame).
	if out, err := sim.Call(ctxT(t), "get_current_time", map[string]string{"format": "simple"}); err != nil || !out.Success {
		t.Fatalf("%+v %v", out, err)
	}
	// A push-to-talk turn on the new connection: the microphone's tone.
	conv := h.Conversation()
	task, err := conv.TalkStart()
	if err != nil {
		t.Fatal(err)
	}
	frames := func() int {
		n := 0
		for _, r := range sim.Received() {
			if r.Conn == 2 && r.Frame.Type == voice.TypeAudio && r.Frame.Task == task {
				n++
			}
		}
		return n
	}
	wait("the microphone frames", func() bool { return frames() >= 8 })
	if _, err := conv.TalkStop(); err != nil {
		t.Fatal(err)
	}
	wait("the reply's end", func() bool {
		for _, r := range sim.Sent() {
			if r.Conn == 2 && r.Frame.Type == voice.TypeEnd && r.Frame.Task == task {
				return true
			}
		}
		return false
	})
	heard := audiotest.BytesToSamples(sim.Audio(task))
	if len(heard) < 4*960 {
		t.Errorf("the server decoded %d samples of the %d microphone frames sent after the reload to input_audio_format: opus; want at least %d", len(heard), frames(), 4*960)
	} else if f := audiotest.PeakFrequency(heard, 16000, 100, 4000, 10); f < micHz-20 || f > micHz+20 {
		t.Errorf("the microphone reached the server at %g Hz, want the %g Hz it heard (the audio was not Opus)", f, micHz)
	}

	// The reply, in Opus, plays as the server's tone.
	out := h.speaker.Output()
	eventually(t, "the reply to play out", func() bool { return conv.Stats().FramesIn >= 10 && out.Stats().Streams == 0 })
	stop()
	played, rate, _, err := audiotest.ReadWAV(speaker)
	if err != nil {
		t.Fatal(err)
	}
	win, loud, wrong := rate/20, 0, 0 // 50 ms windows
	for off := 0; off+win <= len(played); off += win {
		w := played[off : off+win]
		rms := audiotest.RMS(w)
		if rms < 0.02 {
			continue // silence between
		}
		loud++
		if audiotest.Goertzel(w, replyHz, rate) < 0.5*rms*1.414 {
			wrong++
		}
	}
	if loud < 8 || wrong > 2 {
		t.Errorf("the speaker played %d loud windows of 50 ms, %d of them not the reply's %g Hz tone (the Opus reply was not decoded as Opus)", loud, wrong, replyHz)
	}
}

// eventually waits for cond, which no event announces, looking again
// every few milliseconds; it gives up after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
	}
}
