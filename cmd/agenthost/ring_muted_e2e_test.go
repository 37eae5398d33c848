package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestARingOnAMutedSpeakerIsHeardAlone: music plays (the media plugin,
// `agenthost play`), the owner mutes the speaker, and a timer rings: the
// ring is heard and the muted music is not, not even ducked, for as long
// as it rings; measured on the speaker's file.
func TestARingOnAMutedSpeakerIsHeardAlone(t *testing.T) {
	t.Parallel()
	dir, srv := musicServer(t)
	out := filepath.Join(dir, "speaker.wav")
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "media"), filepath.Join(dir, "media")) },
		"audio.backend=file", "audio.output_file="+out, "device.volume=100", "server.params.mode=manual",
		"plugins.state_dir="+filepath.Join(dir, "state"), "device.ring.timeout=1h", "services.builtins=true",
		"plugins.network.allow="+strings.TrimPrefix(srv.URL, "http://"))
	pluginsReady(t, sim)
	cli := func(args ...string) {
		t.Helper()
		if o, err := d.cli(args...); err != nil {
			t.Fatalf("agenthost %s: %v\n%s", strings.Join(args, " "), err, o)
		}
	}
	cli("play", srv.URL+"/music.wav")
	d.waitPlayed("media", 1)
	cli("volume", "mute")
	if res := call(t, sim, "set_timer", `{"seconds":1,"label":"tea"}`); !res.Success {
		t.Fatalf("set_timer: %+v", res)
	}
	d.waitPlayed("ring", 2)
	cli("stop")
	d.waitMorePlayed("media", 0.5)
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
	var loud, chime, musicUnderChime int
	for i := 0; i+w <= len(s); i += w {
		music, ring := db(s[i:i+w], 300), db(s[i:i+w], 1174.66)
		fmt.Fprintf(&b, " %.0f/%.0f", music, ring)
		if math.Abs(music) < 1.5 {
			loud++
		}
		if ring > -6 {
			chime++
			if music > -60 {
				musicUnderChime++
			}
		}
	}
	t.Logf("20 ms windows: music loud %d; chime %d, with music heard under it %d", loud, chime, musicUnderChime)
	if loud < 40 || chime < 10 || musicUnderChime > 0 {
		t.Fatalf("want the music loud before the mute, then only the chime; music/chime dB per window:%s", b.String())
	}
}

// musicServer serves music.wav (a minute of a 300 Hz tone, 44.1 kHz stereo)
// from a new folder, which it returns with the server.
func musicServer(t *testing.T) (string, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("sox", "-n", "-r", "44100", "-c", "2", filepath.Join(dir, "music.wav"), "synth", "60", "sine", "300", "vol", "0.25").CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return dir, srv
}
