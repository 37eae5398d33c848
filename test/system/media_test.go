//go:build system

package system

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestMediaFromThePackage is music on a speaker that runs the package, on
// each suite: the root has ffmpeg (the package Recommends it, as `apt
// install agenthost` brings it), the hardened service writes its speaker to
// a file, and `agenthost play` of an MP3 served over HTTP on 127.0.0.1 (6 s
// of a 300 Hz tone, 44.1 kHz stereo, made with sox and lame) plays through
// the bundled media plugin and the mixer into that file, at the level it was
// made; `agenthost status` counts it as media.
func TestMediaFromThePackage(t *testing.T) {
	pid, root, deb := os.Getenv("SYSTEM_TEST_PID"), os.Getenv("SYSTEM_TEST_ROOT"), os.Getenv("SYSTEM_TEST_DEB")
	if pid == "" || root == "" || deb == "" {
		t.Skip("needs a booted systemd; run scripts/test-system.sh")
	}
	b := &box{t: t, pid: pid, root: root}
	if out, err := b.run("", "sh", "-c", "command -v ffmpeg"); err != nil {
		t.Fatalf("the root has no ffmpeg, which the package Recommends (the media plugin's decoder): %v %s", err, out)
	}

	dir := t.TempDir()
	const secs, hz, amp = 6, 300, 0.25
	url := serveToneMP3(t, dir, secs, hz, amp)

	tok := make([]byte, 16)
	rand.Read(tok)
	token := "mediatest-" + hex.EncodeToString(tok)
	srv, err := voicetest.NewServer(voicetest.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	b.run("", "dpkg", "--purge", "agenthost")
	b.run("", "rm", "-rf", "/etc/agenthost", "/var/lib/agenthost")
	b.must("dpkg", "-i", deb)
	defer b.run("", "dpkg", "--purge", "agenthost")
	b.must("mkdir", "-p", "/etc/credstore")
	b.write("/etc/credstore/agenthost.token", token+"\n", "0600")
	mic := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	b.copyIn(mic, "/var/lib/agenthost/mic.s16")
	b.must("chmod", "0644", "/var/lib/agenthost/mic.s16")
	const speaker = "/var/lib/agenthost/speaker.wav"
	cfg := b.read(config)
	for old, repl := range map[string]string{
		"address: 127.0.0.1:8009": "address: " + srv.Addr(),
		"  backend: portaudio\n":  "  backend: file\n",
		"  input_file: \"\"\n":    "  input_file: /var/lib/agenthost/mic.s16\n",
		"  output_file: \"\"\n":   "  output_file: " + speaker + "\n",
		"  volume: 70\n":          "  volume: 100\n", // the level the music was made at
	} {
		if strings.Count(cfg, old) != 1 {
			t.Fatalf("the packaged config has %d of %q", strings.Count(cfg, old), old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	b.write(config, cfg, "0644")

	cur := b.cursor()
	b.must("systemctl", "restart", unit)
	waitFor(t, srv, time.Minute, "a register with the media plugin's play_media", func() bool { return lastRegisterHas(srv, "play_media") })
	out := b.must("agenthost", "play", "--config", config, url)
	t.Logf("agenthost play %s: %s", url, strings.TrimSpace(out))

	type output struct {
		Streams []json.RawMessage  `json:"streams"`
		Played  map[string]float64 `json:"played_s"`
	}
	var st struct {
		Output *output `json:"output"`
	}
	var last string
	if !eventually(time.Minute, func() bool {
		last = b.must("agenthost", "status", "--config", config)
		st.Output = nil
		return json.Unmarshal([]byte(last), &st) == nil && st.Output != nil &&
			st.Output.Played["media"] >= secs-0.5 && len(st.Output.Streams) == 0
	}) {
		t.Fatalf("the music did not play out on the speaker; agenthost status:\n%s\njournal:\n%s", last, b.journalSince(cur))
	}
	t.Logf("agenthost status, output: played %v s, no streams left", st.Output.Played)
	b.must("systemctl", "stop", unit) // the file sink writes its WAV header's sizes when it closes

	wav := filepath.Join(dir, "speaker.wav")
	if err := os.WriteFile(wav, []byte(b.read(speaker)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, rate, channels, err := audiotest.ReadWAV(wav)
	if err != nil {
		t.Fatalf("the speaker's file: %v", err)
	}
	if channels != 1 {
		s = firstChannel(s, channels)
	}
	// 20 ms windows: the tone at the level it was made (within 1.5 dB), and
	// little else in them.
	w := rate / 50
	toneWin, otherWin := 0, 0
	for i := 0; i+w <= len(s); i += w {
		l := audiotest.Goertzel(s[i:i+w], hz, rate) / amp
		rms := audiotest.RMS(s[i:i+w]) * math.Sqrt2 / amp // a sine's amplitude from its RMS, relative to the tone's
		switch {
		case math.Abs(20*math.Log10(max(l, 1e-9))) < 1.5 && rms < 1.1*l:
			toneWin++
		case rms > 0.05:
			otherWin++
		}
	}
	t.Logf("%s: %d Hz, %d channel(s), %.1f s: %d windows of the %d Hz tone at its level, %d of other sound",
		speaker, rate, channels, float64(len(s)/max(channels, 1))/float64(rate), toneWin, hz, otherWin)
	if toneWin < (secs-0.5)*50 || toneWin > (secs+0.5)*50 || otherWin > 10 {
		t.Errorf("want about %d s of the %d Hz tone at %.2f of full scale in the speaker's file, and nothing else", secs, hz, amp)
	}
}

// serveToneMP3 makes secs of a sine at hz (amp of full scale, 44.1 kHz
// stereo) with sox, encodes it with lame, and serves it over HTTP on
// 127.0.0.1, which is the same inside the booted root (it shares this
// network namespace); it returns the MP3's URL.
func serveToneMP3(t *testing.T, dir string, secs, hz int, amp float64) string {
	t.Helper()
	wav := filepath.Join(dir, "tone.wav")
	for _, c := range [][]string{
		{"sox", "-n", "-r", "44100", "-c", "2", wav, "synth", strconv.Itoa(secs), "sine", strconv.Itoa(hz), "vol", strconv.FormatFloat(amp, 'f', -1, 64)},
		{"lame", "--quiet", "-b", "192", wav, filepath.Join(dir, "tone.mp3")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	web := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(web.Close)
	return web.URL + "/tone.mp3"
}

// firstChannel returns channel 0 of interleaved samples.
func firstChannel(s []int16, channels int) []int16 {
	out := make([]int16, 0, len(s)/channels)
	for i := 0; i+channels <= len(s); i += channels {
		out = append(out, s[i])
	}
	return out
}
