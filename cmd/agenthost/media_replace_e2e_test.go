package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// Tones the media tests play, far enough apart that a 100 ms window tells
// them apart at 20 dB below one another.
const (
	toneA  = 300.0  // song A
	toneB  = 450.0  // song B
	toneN  = 700.0  // an announcement
	toneN2 = 1000.0 // another
)

// toneServer makes WAV files of one sine each (name: Hz, secs long, at a
// quarter of full scale) and serves them on loopback.
func toneServer(t *testing.T, secs int, tones map[string]float64) (dir, url string) {
	t.Helper()
	dir = t.TempDir()
	for name, hz := range tones {
		if out, err := exec.Command("sox", "-n", "-r", "44100", "-c", "2", filepath.Join(dir, name),
			"synth", fmt.Sprint(secs), "sine", fmt.Sprint(hz), "vol", "0.25").CombinedOutput(); err != nil {
			t.Fatalf("sox %s: %v\n%s", name, err, out)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return dir, srv.URL
}

// toneWindows reads the speaker's file and gives, for each 100 ms of it,
// the level in dB (0: a quarter of full scale, as toneServer makes them) of
// each of the tones asked for.
func toneWindows(t *testing.T, path string, tones ...float64) [][]float64 {
	t.Helper()
	s, rate, channels, err := audiotest.ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	if channels > 1 { // the left channel: the tones are on both
		mono := make([]int16, len(s)/channels)
		for i := range mono {
			mono[i] = s[i*channels]
		}
		s = mono
	}
	w := rate / 10
	full := 0.25 * math.MaxInt16
	var out [][]float64
	for i := 0; i+w <= len(s); i += w {
		row := make([]float64, len(tones))
		for k, hz := range tones {
			row[k] = 20 * math.Log10(max(32768*audiotest.Goertzel(s[i:i+w], hz, rate), 1)/full)
		}
		out = append(out, row)
	}
	return out
}

// sounds: a tone at or above -30 dB (ducked by 20 dB, it is still heard).
func sounds(db float64) bool { return db > -30 }

// startMediaHostTo starts a daemon with the bundled media plugin, playing
// into the file out.
func startMediaHostTo(t *testing.T, sim *voicetest.Server, out string, sets ...string) *hostProc {
	t.Helper()
	mic := filepath.Join(filepath.Dir(out), "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "media"), filepath.Join(dir, "media")) },
		append([]string{"audio.backend=file", "audio.input_file=" + mic, "audio.output_file=" + out, "device.volume=100",
			"server.params.mode=manual", "plugins.state_dir=" + filepath.Join(filepath.Dir(out), "state")}, sets...)...)
	pluginsReady(t, sim)
	return d
}

// mustCLI runs agenthost with args and fails the test if it fails.
func (d *hostProc) mustCLI(args ...string) string {
	d.t.Helper()
	o, err := d.cli(args...)
	if err != nil {
		d.t.Fatalf("agenthost %s: %v\n%s", strings.Join(args, " "), err, o)
	}
	return o
}

// TestAPlayOfAClassReplacesTheOneThatPlays (issue 42 item 2): with a song
// and an announcement playing, `agenthost play B` and `announce N2` replace
// them (the plugin's README promises it; the plugin opened the new stream
// before it stopped the old one, and plugins.audio.max_streams, 2, refused
// it), and so do six plays at once, of both classes. On the speaker's
// file: never two songs or two announcements at once, and each new one is
// heard.
func TestAPlayOfAClassReplacesTheOneThatPlays(t *testing.T) {
	t.Parallel()
	_, url := toneServer(t, 60, map[string]float64{"a.wav": toneA, "b.wav": toneB, "n.wav": toneN, "n2.wav": toneN2})
	out := filepath.Join(t.TempDir(), "speaker.wav")
	sim := newSim(t, voicetest.Options{})
	d := startMediaHostTo(t, sim, out)
	d.mustCLI("play", url+"/a.wav")
	d.waitPlayed("media", 1)
	d.mustCLI("announce", url+"/n.wav")
	d.waitPlayed("announcement", 1)
	d.mustCLI("play", url+"/b.wav")
	d.waitMorePlayed("media", 1)
	d.mustCLI("announce", url+"/n2.wav")
	d.waitMorePlayed("announcement", 1)

	// Six at once: each is taken, one of each class is left playing.
	plays := [][]string{{"play", url + "/a.wav"}, {"announce", url + "/n.wav"}, {"play", url + "/b.wav"},
		{"announce", url + "/n2.wav"}, {"play", url + "/a.wav"}, {"announce", url + "/n.wav"}}
	var wg sync.WaitGroup
	errs := make([]string, len(plays))
	for i, args := range plays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o, err := d.cli(args...); err != nil {
				errs[i] = fmt.Sprintf("agenthost %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(o))
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	st := string(call(t, sim, "get_media_status", `{}`).Data)
	if strings.Count(st, `"class":"media"`) != 1 || strings.Count(st, `"class":"announcement"`) != 1 {
		t.Errorf("after six plays, get_media_status: %s; want one media and one announcement playing", st)
	}
	d.waitMorePlayed("media", 1)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	var songs, news, b, n2 int
	for _, row := range toneWindows(t, out, toneA, toneB, toneN, toneN2) {
		if sounds(row[0]) && sounds(row[1]) {
			songs++
		}
		if sounds(row[2]) && sounds(row[3]) {
			news++
		}
		if sounds(row[1]) {
			b++
		}
		if sounds(row[3]) {
			n2++
		}
	}
	t.Logf("100 ms windows: two songs at once %d, two announcements %d; song B %d, announcement N2 %d", songs, news, b, n2)
	// A window that holds the switch may hold both: at most one per switch.
	if songs > 4 || news > 4 || b < 10 || n2 < 10 {
		t.Fatalf("want one song and one announcement at a time, and B and N2 heard")
	}
}

// TestTheSongChangesDuringAnAnnouncement (issue 42 item 8): a new song
// asked for while an announcement plays over the music takes the old
// song's place, under the announcement, which plays on.
func TestTheSongChangesDuringAnAnnouncement(t *testing.T) {
	t.Parallel()
	_, url := toneServer(t, 60, map[string]float64{"a.wav": toneA, "b.wav": toneB, "n.wav": toneN})
	out := filepath.Join(t.TempDir(), "speaker.wav")
	sim := newSim(t, voicetest.Options{})
	d := startMediaHostTo(t, sim, out)
	d.mustCLI("play", url+"/a.wav")
	d.waitPlayed("media", 1)
	d.mustCLI("announce", url+"/n.wav")
	d.waitPlayed("announcement", 1)
	if o, err := d.cli("play", url+"/b.wav"); err != nil {
		t.Fatalf("agenthost play B during an announcement: %v\n%s", err, o)
	}
	d.waitMorePlayed("media", 1.5)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	var aAfterB, bUnderN int
	seenB := false
	for _, row := range toneWindows(t, out, toneA, toneB, toneN) {
		if seenB && sounds(row[0]) {
			aAfterB++
		}
		if sounds(row[1]) {
			seenB = true
			if row[2] > -3 && math.Abs(row[1]+20) < 3 {
				bUnderN++
			}
		}
	}
	t.Logf("100 ms windows: song A after B began %d, B ducked under the announcement %d", aAfterB, bUnderN)
	if aAfterB > 1 || bUnderN < 10 {
		t.Fatal("want song B in A's place, ducked under the announcement that plays on")
	}
}
