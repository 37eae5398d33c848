package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMusicIsDuckedForATurnAnAnnouncementAndARing: the bundled media plugin
// plays music (a 300 Hz tone, 44.1 kHz stereo MP3 over HTTP, `agenthost
// play`) through the daemon's mixer into the speaker's file; a push-to-talk
// turn ducks it (and the plugin is told) and its reply plays over it; an
// announcement (660 Hz WAV, `agenthost announce`), then one an MCP client
// asks the media plugin for (520 Hz, `play_media` through `agenthost mcp`),
// plays over the ducked music; a timer's ring (1175 Hz) is heard over it
// all; between them the music is loud again.
func TestMusicIsDuckedForATurnAnAnnouncementAndARing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sox := func(name, rate, channels string, effects ...string) {
		if out, err := exec.Command("sox", append([]string{"-n", "-r", rate, "-c", channels, filepath.Join(dir, name)}, effects...)...).CombinedOutput(); err != nil {
			t.Fatalf("sox %s: %v\n%s", name, err, out)
		}
	}
	sox("music.wav", "44100", "2", "synth", "60", "sine", "300", "vol", "0.25")
	if out, err := exec.Command("lame", "--quiet", "-b", "192", filepath.Join(dir, "music.wav"), filepath.Join(dir, "music.mp3")).CombinedOutput(); err != nil {
		t.Fatalf("lame: %v\n%s", err, out)
	}
	sox("news.wav", "22050", "1", "synth", "2", "sine", "660", "vol", "0.25")
	sox("bulletin.wav", "16000", "1", "synth", "2", "sine", "520", "vol", "0.25")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)

	mic := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "speaker.wav")
	hooks := string(newHookLog(t, dir))                             // a folder of its own: a sandboxed hook cannot write beside the state
	sim := newSim(t, voicetest.Options{ReplyDuration: time.Second}) // replies: 1 s of 880 Hz
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "media"), filepath.Join(dir, "media")) },
		"audio.backend=file", "audio.input_file="+mic, "audio.output_file="+out, "device.volume=100", "server.params.mode=manual",
		"plugins.state_dir="+filepath.Join(dir, "state"), "device.ring.timeout=1h", "services.builtins=true", // the timer
		"plugins.network.allow="+strings.TrimPrefix(srv.URL, "http://"), // the MCP client's URL: loopback stands for a public server
		"conversation.hooks.media="+`printf '%s %s %s %s\n' "$AGENTHOST_STATE" "$AGENTHOST_CLASS" "$AGENTHOST_BY" "$AGENTHOST_SOURCE" >> `+hooks)
	pluginsReady(t, sim)
	cli := func(args ...string) string {
		t.Helper()
		o, err := d.cli(args...)
		if err != nil {
			t.Fatalf("agenthost %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return o
	}
	// Each step waits for an amount of music played after the last one
	// (the mixer's count, which stands still while the machine is too busy
	// to feed it), never for a point in the music: a slow `agenthost` or a
	// late duck's end lengthens the ducked part, not the loud one after it.
	cli("play", srv.URL+"/music.mp3?token=s3cret")
	d.waitPlayed("media", 1.5)
	cli("talk", "start")
	d.waitMorePlayed("media", 1)
	// The media plugin is told that the turn ducks it (AudioEvent.held).
	waitFor(t, sim, "get_media_status saying held: ducked", func() bool {
		return strings.Contains(string(call(t, sim, "get_media_status", `{}`).Data), `"held":"ducked"`)
	})
	task := sentOnTask.FindStringSubmatch(cli("talk", "stop"))
	if task == nil {
		t.Fatal("talk stop named no task")
	}
	waitFor(t, sim, "the reply", func() bool { return replyEnded(sim, 1, task[1]) })
	d.waitPlayed("voice", 0.9)
	d.waitMorePlayed("media", 2)
	cli("announce", srv.URL+"/news.wav")
	d.waitPlayed("announcement", 2)
	d.waitMorePlayed("media", 2)
	cs := mcpSession(t, d)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "play_media",
		Arguments: map[string]any{"url": srv.URL + "/bulletin.wav", "class": "announcement"}})
	if err != nil || res.IsError {
		t.Fatalf("an MCP client's play_media: %v %s", err, mcpText(res))
	}
	d.waitPlayed("announcement", 4)
	d.waitMorePlayed("media", 2)
	if res := call(t, sim, "set_timer", `{"seconds":1,"label":"tea"}`); !res.Success {
		t.Fatalf("set_timer: %+v", res)
	}
	d.waitPlayed("ring", 1)
	cli("stop")
	d.waitMorePlayed("media", 2)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	// The media hook told each change, and never the URL's token.
	told, err := os.ReadFile(hooks)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"started media  ", "ducked media host ", "resumed media  ", "started announcement  ", "stopped announcement  "} {
		if !strings.Contains(string(told), want) {
			t.Errorf("the media hook did not tell %q:\n%s", want, told)
		}
	}
	if strings.Contains(string(told), "s3cret") || strings.Contains(string(told), "?") {
		t.Errorf("the media hook told the URL's query:\n%s", told)
	}
	s, _, _, err := audiotest.ReadWAV(out)
	if err != nil {
		t.Fatal(err)
	}
	const w = 320 // 20 ms
	full := 0.25 * math.MaxInt16
	db := func(l float64) float64 { return 20 * math.Log10(max(l, 1)/full) }
	level := func(p []int16, hz float64) float64 { return 32768 * audiotest.Goertzel(p, hz, 16000) }
	var b strings.Builder
	var loud, ducked, news, newsOverLoud, bulletin, bulletinOverLoud, chime, chimeOverLoud, loudAfterRing int
	for i := 0; i+w <= len(s); i += w {
		music, ann, mcpAnn, ring := db(level(s[i:i+w], 300)), db(level(s[i:i+w], 660)), db(level(s[i:i+w], 520)), db(level(s[i:i+w], 1174.66))
		fmt.Fprintf(&b, " %.0f/%.0f/%.0f", music, ann, ring)
		isLoud := math.Abs(music) < 1.5
		switch {
		case isLoud:
			loud++
			if chime > 0 {
				loudAfterRing++
			}
		case math.Abs(music+20) < 2:
			ducked++
		}
		if ann > -6 {
			news++
			if isLoud {
				newsOverLoud++
			}
		}
		if mcpAnn > -6 {
			bulletin++
			if isLoud {
				bulletinOverLoud++
			}
		}
		if ring > -6 {
			chime++
			if isLoud {
				chimeOverLoud++
			}
		}
	}
	t.Logf("20 ms windows: music loud %d (%d after the ring), ducked %d; announcement %d (%d over loud music), the MCP client's %d (%d); chime %d (%d over loud music)",
		loud, loudAfterRing, ducked, news, newsOverLoud, bulletin, bulletinOverLoud, chime, chimeOverLoud)
	// Music: ≥ 6 s of it loud (of 8.5 s or more: 1.5 s, 2 s after each
	// duck, and until the timer rings), ≥ 0.5 s after the ring; ducked for
	// the turn (1 s of listening and the reply), the announcements (2 s
	// each) and the ring (1 s).
	if loud < 300 || loudAfterRing < 25 || ducked < 250 || news < 90 || bulletin < 90 || chime < 10 ||
		newsOverLoud > 2 || bulletinOverLoud > 2 || chimeOverLoud > 2 {
		t.Fatalf("want the music loud, and ducked under the turn, the announcement and the ring; music/announcement/chime dB per window:%s", b.String())
	}
}
