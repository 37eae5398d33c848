package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestStereoMusicKeepsItsChannelsAndAReplyIsCentred: the speaker's file is
// opened at 48 kHz stereo (audio.output_rate, audio.output_channels); music
// whose two channels differ (44.1 kHz WAV, 300 Hz left, 660 Hz right, played
// by the bundled media plugin) reaches it at 48 kHz with each tone in its own
// channel, and a reply (16 kHz mono, 880 Hz) comes out on both channels at
// the same level. Status names the output's format and the device's.
func TestStereoMusicKeepsItsChannelsAndAReplyIsCentred(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if out, err := exec.Command("sox", "-n", "-r", "44100", "-c", "2", filepath.Join(dir, "music.wav"),
		"synth", "15", "sine", "300", "sine", "660", "vol", "0.25").CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	mic := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "speaker.wav")
	sim := newSim(t, voicetest.Options{ReplyDuration: time.Second}) // replies: 1 s of 880 Hz
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "media"), filepath.Join(dir, "media")) },
		"audio.backend=file", "audio.input_file="+mic, "audio.output_file="+out, "audio.output_rate=48000", "audio.output_channels=2",
		"device.volume=100", "server.params.mode=manual", "plugins.state_dir="+filepath.Join(dir, "state"))
	pluginsReady(t, sim)
	cli := func(args ...string) string {
		t.Helper()
		o, err := d.cli(args...)
		if err != nil {
			t.Fatalf("agenthost %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return o
	}
	var st struct {
		Output struct {
			Format       string `json:"format"`
			DeviceFormat string `json:"device_format"`
		} `json:"output"`
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if json.Unmarshal([]byte(cli("status")), &st) == nil && st.Output.DeviceFormat != "" {
			break // the speaker is open
		}
	}
	if st.Output.Format != "48000 Hz × 2 ch" || st.Output.DeviceFormat != "48000 Hz × 2 ch" {
		t.Errorf("status names the output's format %q and the device's %q; want 48000 Hz × 2 ch for both", st.Output.Format, st.Output.DeviceFormat)
	}
	cli("play", srv.URL+"/music.wav")
	d.waitPlayed("media", 1.5)
	cli("talk", "start")
	d.waitPlayed("media", 2)
	task := sentOnTask.FindStringSubmatch(cli("talk", "stop"))
	if task == nil {
		t.Fatal("talk stop named no task")
	}
	waitFor(t, sim, "the reply", func() bool { return replyEnded(sim, 1, task[1]) })
	d.waitPlayed("voice", 0.9)
	d.waitMorePlayed("media", 3)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	s, rate, channels, err := audiotest.ReadWAV(out)
	if err != nil {
		t.Fatal(err)
	}
	if rate != 48000 || channels != 2 {
		t.Fatalf("the speaker's file is %d Hz × %d ch; want 48000 Hz × 2 ch", rate, channels)
	}
	left, right := make([]int16, len(s)/2), make([]int16, len(s)/2)
	for i := range left {
		left[i], right[i] = s[2*i], s[2*i+1]
	}
	const w = 960 // 20 ms
	db := func(p []int16, hz float64) float64 {
		return 20 * math.Log10(max(32768*audiotest.Goertzel(p, hz, rate), 1)/math.MaxInt16)
	}
	var b strings.Builder
	var music, crossed, reply, offCentre int
	for i := 0; i+w <= len(left); i += w {
		l, r := left[i:i+w], right[i:i+w]
		l300, l660, r300, r660 := db(l, 300), db(l, 660), db(r, 300), db(r, 660)
		l880, r880 := db(l, 880), db(r, 880)
		fmt.Fprintf(&b, " %.0f/%.0f|%.0f/%.0f|%.1f/%.1f", l300, l660, r300, r660, l880, r880)
		replying := l880 > -30 || r880 > -30
		if (l300 > -40 || r660 > -40) && !replying { // music, loud or ducked (the reply's 880 Hz spills into 660 Hz)
			music++
			if r300 > l300-30 || l660 > r660-30 {
				crossed++
			}
		}
		if replying {
			reply++
			if math.Abs(l880-r880) > 0.5 {
				offCentre++
			}
		}
	}
	t.Logf("20 ms windows: music %d (%d with a tone in the wrong channel); reply %d (%d off centre)", music, crossed, reply, offCentre)
	if music < 200 || crossed > 2 || reply < 40 || offCentre > 2 {
		t.Fatalf("want each tone of the music in its own channel and the reply on both at one level; L300/L660|R300/R660|L880/R880 dB per window:%s", b.String())
	}
}
