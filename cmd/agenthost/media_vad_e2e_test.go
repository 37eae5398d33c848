package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestListeningToASilentRoomDoesNotDuckTheMusic: with server.params.mode
// vad and no wake word the speaker listens all the time. The music (the
// media plugin, `agenthost play`) stays loud while the room is silent, is
// ducked while a turn is heard (the server's VAD detects speech) and its
// reply plays, and is loud again after; measured on the speaker's file.
// With audio.mix.media_while_active: pause the music plays on (its
// position advances) while the speaker listens to a silent room.
func TestListeningToASilentRoomDoesNotDuckTheMusic(t *testing.T) {
	t.Parallel()
	dir, srv := musicServer(t)
	// The room: 8 s of silence, then 1 s of "speech" (a loud tone), then
	// silence, over and over.
	mic := filepath.Join(dir, "mic.raw")
	clip := append(audiotest.Silence(16000, 8*time.Second), audiotest.Tone(440, 16000, time.Second)...)
	if err := audiotest.WriteRaw(mic, append(clip, audiotest.Silence(16000, time.Second)...)); err != nil {
		t.Fatal(err)
	}
	silent := filepath.Join(dir, "silence.raw")
	if err := audiotest.WriteRaw(silent, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, sim *voicetest.Server, mic, out string, sets ...string) *hostProc {
		t.Helper()
		d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "media"), filepath.Join(dir, "media")) },
			append([]string{"audio.backend=file", "audio.input_file=" + mic, "audio.output_file=" + out, "device.volume=100",
				"server.params.mode=vad", "plugins.state_dir=" + filepath.Join(t.TempDir(), "state"),
				"plugins.network.allow=" + strings.TrimPrefix(srv.URL, "http://")}, sets...)...)
		pluginsReady(t, sim)
		if o, err := d.cli("play", srv.URL+"/music.wav"); err != nil {
			t.Fatalf("agenthost play: %v\n%s", err, o)
		}
		return d
	}

	t.Run("duck", func(t *testing.T) {
		sim := newSim(t, voicetest.Options{ReplyDuration: time.Second, VADHang: 300 * time.Millisecond, Pace: true})
		out := filepath.Join(t.TempDir(), "speaker.wav")
		d := start(t, sim, mic, out)
		d.waitPlayed("media", 1.5)
		// The next turn the server hears, while the music plays, and its reply.
		before := len(listens(sim, voice.ListenStop, 0))
		var task string
		waitFor(t, sim, "a turn heard while the music plays", func() bool {
			if heard := listens(sim, voice.ListenStop, 0); len(heard) > before {
				task = heard[before]
				return true
			}
			return false
		})
		waitFor(t, sim, "its reply", func() bool { return replyEnded(sim, 0, task) })
		d.waitMorePlayed("media", 1.5)
		if err := d.stop(); err != nil {
			t.Fatal(err)
		}
		s, _, _, err := audiotest.ReadWAV(out)
		if err != nil {
			t.Fatal(err)
		}
		const w = 320 // 20 ms
		full := 0.25 * math.MaxInt16
		db := func(p []int16, hz float64) float64 {
			return 20 * math.Log10(max(32768*audiotest.Goertzel(p, hz, 16000), 1)/full)
		}
		var b strings.Builder
		var loud, ducked, reply, replyOverLoud int
		for i := 0; i+w <= len(s); i += w {
			music, voice := db(s[i:i+w], 300), db(s[i:i+w], 880)
			fmt.Fprintf(&b, " %.0f/%.0f", music, voice)
			isLoud := math.Abs(music) < 1.5
			switch {
			case isLoud:
				loud++
			case math.Abs(music+20) < 2:
				ducked++
			}
			if voice > -20 {
				reply++
				if isLoud {
					replyOverLoud++
				}
			}
		}
		t.Logf("20 ms windows: music loud %d, ducked %d; reply %d (%d over loud music)", loud, ducked, reply, replyOverLoud)
		// Loud for 1.5 s before the turn and after it, at the least; ducked
		// for the turn heard and its 1 s reply.
		if loud < 120 || ducked < 50 || reply < 40 || replyOverLoud > 2 {
			t.Fatalf("want the music loud while the room is silent and ducked under the turn and its reply; music/reply dB per window:%s", b.String())
		}
	})

	t.Run("pause", func(t *testing.T) {
		sim := newSim(t, voicetest.Options{})
		d := start(t, sim, silent, filepath.Join(t.TempDir(), "speaker.wav"), "audio.mix.media_while_active=pause")
		d.waitPlayed("media", 2)
	})
}
