package main

// The media plugin's decoder failing midway, through the daemon: the real
// plugin, the real ffmpeg, the file sink playing in real time. A hang or a
// crash is provoked by a fake ffmpeg (fakeFFmpeg) that runs the real one and
// sends it a signal when the test says.

import (
	"encoding/json"
	"fmt"
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

// fakeFFmpeg writes a fake ffmpeg, for the faults a test cannot provoke in
// the real one: a script that execs the real ffmpeg and, once the test
// calls signal("STOP") (a decoder stuck on crafted input) or
// signal("SEGV") (one that crashes), sends it that signal. Each decoder
// takes the first signal sent after it started.
func fakeFFmpeg(t *testing.T) (path string, signal func(sig string)) {
	t.Helper()
	real, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	signals := filepath.Join(dir, "signals")
	if err := os.Mkdir(signals, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "fake-ffmpeg")
	script := fmt.Sprintf(`#!/bin/sh
# A fake ffmpeg (tests only): the real one, which gets the next signal the
# test names in %[1]s.
me=$$
next=$(( $(ls %[1]s | wc -l) + 1 ))
( while [ ! -e %[1]s/$next ]; do sleep 0.05; done; kill -$(cat %[1]s/$next) $me ) </dev/null >/dev/null 2>&1 &
exec %[2]s "$@"
`, signals, real)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	return path, func(sig string) {
		n++
		tmp := filepath.Join(dir, "next")
		if err := os.WriteFile(tmp, []byte(sig), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(signals, strconv.Itoa(n))); err != nil {
			t.Fatal(err)
		}
	}
}

// startMediaHostConfig starts the daemon with the bundled media plugin configured
// by media (plugins.config.media), the file sink writing the speaker's
// sound to speaker.wav in real time, and the given settings.
func startMediaHostConfig(t *testing.T, sim *voicetest.Server, media map[string]any, sets ...string) *hostProc {
	t.Helper()
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	copyExec(t, bundled(t, "media"), filepath.Join(plugins, "media"))
	mic := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	// JSON is YAML: plugins.config.media with its lists.
	cfg, err := json.Marshal(map[string]any{"plugins": map[string]any{"config": map[string]any{"media": media}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	sets = append([]string{
		"server.address=" + sim.Addr(), "plugins.runtime_dir=" + filepath.Join(dir, "run"), "plugins.dirs=" + plugins,
		"plugins.state_dir=" + filepath.Join(dir, "state"), "services.builtins=false", "log.level=debug",
		"audio.backend=file", "audio.input_file=" + mic, "audio.output_file=" + filepath.Join(dir, "speaker.wav"),
		"device.volume=100", "server.params.mode=manual",
	}, sets...)
	args := []string{"run", "--config", file}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	d := startHostArgs(t, testbinHost(t), args, dir)
	d.sets = sets
	pluginsReady(t, sim)
	return d
}

// mediaStatus is get_media_status as the voice server's model sees it.
type mediaStatus struct {
	Playing []struct {
		URL      string  `json:"url"`
		Position float64 `json:"position_s"`
	} `json:"playing"`
	LastEnded string `json:"last_ended"`
}

func getMediaStatus(t *testing.T, sim *voicetest.Server) mediaStatus {
	t.Helper()
	o := call(t, sim, "get_media_status", `{}`)
	var st mediaStatus
	if !o.Success || json.Unmarshal(o.Data, &st) != nil {
		t.Fatalf("get_media_status: %+v", o)
	}
	return st
}

// waitMediaPosition waits until the sound playing has played secs.
func waitMediaPosition(t *testing.T, sim *voicetest.Server, secs float64) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st := getMediaStatus(t, sim)
		if len(st.Playing) == 1 && st.Playing[0].Position >= secs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sound never reached %.1f s: %+v", secs, st)
		}
	}
}

// waitMediaEnded polls get_media_status until nothing plays and returns
// last_ended; a sound still playing after a minute fails the test.
func waitMediaEnded(t *testing.T, sim *voicetest.Server, what string) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st := getMediaStatus(t, sim)
		if len(st.Playing) == 0 {
			return st.LastEnded
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still playing after a minute: %+v", what, st)
		}
	}
}

// mediaMaterial makes an MP3 tone of secs seconds in dir.
func mediaMaterial(t *testing.T, dir, name string, secs int) string {
	t.Helper()
	wav := filepath.Join(dir, name+".wav")
	mp3 := filepath.Join(dir, name+".mp3")
	for _, c := range [][]string{
		{"sox", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", strconv.Itoa(secs), "sine", "300", "vol", "0.25"},
		{"lame", "--quiet", "-b", "128", wav, mp3},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	return mp3
}

// mediaServer serves dir, an endless radio looping radio.mp3's bytes, and
// /stall: 3 s of it, then nothing on an open connection.
func mediaServer(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	mux.HandleFunc("/radio", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join(dir, "radio.mp3"))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "audio/mpeg")
		for r.Context().Err() == nil {
			if _, err := w.Write(b); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join(dir, "radio.mp3"))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write(b[:3*128000/8]) // 3 s at 128 kbit/s
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAHungDecoderEndsItsSound: a decoder stopped (SIGSTOP, as one stuck on
// crafted input) while it plays a file, a sound over HTTP and an endless
// radio is ended within the hang timeout: nothing plays, last_ended says
// the decoder hung, and no stopped decoder is left.
func TestAHungDecoderEndsItsSound(t *testing.T) {
	dir := t.TempDir()
	mediaMaterial(t, dir, "music", 60)
	mediaMaterial(t, dir, "radio", 10)
	srv := mediaServer(t, dir)
	fake, signal := fakeFFmpeg(t)
	sim := newSim(t, voicetest.Options{})
	d := startMediaHostConfig(t, sim, map[string]any{"dirs": []string{dir}, "ffmpeg": fake})
	for _, url := range []string{filepath.Join(dir, "music.mp3"), srv.URL + "/music.mp3", srv.URL + "/radio"} {
		if out, err := d.cli("play", url); err != nil {
			t.Fatalf("agenthost play %s: %v\n%s", url, err, out)
		}
		waitMediaPosition(t, sim, 1)
		signal("STOP")
		last := waitMediaEnded(t, sim, url+" with its decoder stopped")
		t.Logf("%s: %s", url, last)
		if !strings.Contains(last, "hung") {
			t.Errorf("%s: last_ended %q, want it to say the decoder hung", url, last)
		}
		if stopped := stoppedDecoders(t); len(stopped) > 0 {
			t.Errorf("%s: stopped decoders left: %v", url, stopped)
		}
	}
}

// TestADecoderCrashOrAStalledStreamIsNamed: a decoder killed by SIGSEGV 2 s
// into a 120 s sound, and a stream that stops sending after 3 s, are not
// "played to the end": last_ended names the crash and the stall.
func TestADecoderCrashOrAStalledStreamIsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mediaMaterial(t, dir, "long", 120)
	mediaMaterial(t, dir, "radio", 10)
	srv := mediaServer(t, dir)
	fake, signal := fakeFFmpeg(t)
	sim := newSim(t, voicetest.Options{})
	d := startMediaHostConfig(t, sim, map[string]any{"ffmpeg": fake, "stall_timeout": "2s"})

	if out, err := d.cli("play", srv.URL+"/stall"); err != nil {
		t.Fatalf("agenthost play: %v\n%s", err, out)
	}
	if last := waitMediaEnded(t, sim, "the stalled stream"); !strings.Contains(last, "stalled") {
		t.Errorf("a stream that stalled after 3 s ended with %q, want the stall named", last)
	}

	if out, err := d.cli("play", srv.URL+"/long.mp3"); err != nil {
		t.Fatalf("agenthost play: %v\n%s", err, out)
	}
	waitMediaPosition(t, sim, 2)
	signal("SEGV")
	last := waitMediaEnded(t, sim, "the crashed decoder")
	t.Logf("the crash: %s", last)
	if !strings.Contains(last, "segmentation fault") || strings.Contains(last, "played to the end") {
		t.Errorf("a decoder killed by SIGSEGV ended with %q, want the crash named", last)
	}
}

// stoppedDecoders lists the ffmpeg processes in the stopped state (T).
func stoppedDecoders(t *testing.T) []string {
	t.Helper()
	var out []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i > 0 && strings.Contains(s[:i], "(ffmpeg") && strings.HasPrefix(s[i+1:], " T") {
			out = append(out, s[:i+1])
		}
	}
	return out
}
