package main

import (
	"github.com/agenthost/agenthost/audio/audiotest"

	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// decoderBound is the media plugin's default decoder memory bound.
const decoderBound = 128 << 20

// TestHostileMediaCannotHurtTheSpeaker feeds the media plugin's decoder,
// through the daemon (real plugin, real ffmpeg, the file sink), absurd and
// crafted files and streams: a header that says 4 Hz or 1 Hz (from the
// owner, and from the model as an announcement), 64 channels, a FLAC whose
// frames lie about its rate, a WAV whose header claims 4 GB, a stream that
// stalls, and a decoder that hangs or crashes (a fake ffmpeg). For each:
// play_media or last_ended says what happened; the decoder's peak memory
// (the kernel's count, logged by the plugin) stays under its bound plus what
// a normal sound's decoder takes; the daemon's memory stays flat; the
// speaker answers (status, and a spoken turn at the end).
func TestHostileMediaCannotHurtTheSpeaker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mediaMaterial(t, dir, "normal", 3)
	mediaMaterial(t, dir, "radio", 10)
	audiotest.LyingWAV(t, filepath.Join(dir, "4hz.wav"), 4, 1, 2000, 0)
	audiotest.LyingWAV(t, filepath.Join(dir, "1hz.wav"), 1, 1, 2000, 0)
	audiotest.LyingWAV(t, filepath.Join(dir, "64ch.wav"), 48000, 64, 4800, 0)
	audiotest.LyingWAV(t, filepath.Join(dir, "claims4gb.wav"), 48000, 2, 48000, 0xfffffff0)
	lie := audiotest.LyingFLAC(t, dir)
	srv := mediaServer(t, dir)
	fake, signal := fakeFFmpeg(t)
	sim := newSim(t, voicetest.Options{ReplyDuration: time.Second})
	d := startMediaHostConfig(t, sim, map[string]any{"dirs": []string{dir}, "ffmpeg": fake, "stall_timeout": "2s"},
		"plugins.network.allow="+strings.TrimPrefix(srv.URL, "http://")) // the model's URLs: loopback stands for a public server

	play := func(by, url, class string) (ok bool, msg string) {
		t.Helper()
		if by == "owner" {
			verb := map[string]string{"media": "play", "announcement": "announce"}[class]
			out, err := d.cli(verb, url)
			return err == nil, out
		}
		params, _ := json.Marshal(map[string]string{"url": url, "class": class})
		o := call(t, sim, "play_media", string(params))
		return o.Success, o.Error
	}
	// The baseline: a normal sound, played to its end.
	if ok, msg := play("owner", srv.URL+"/normal.mp3", "media"); !ok {
		t.Fatalf("a normal sound: %s", msg)
	}
	if last := waitMediaEnded(t, sim, "a normal sound"); !strings.Contains(last, "played to the end") {
		t.Fatalf("a normal sound ended with %q", last)
	}
	peaks := decodersEnded(t, d, "a normal sound", 0)
	if len(peaks) != 1 {
		t.Fatalf("the plugin logged %d decoders' peaks, want 1", len(peaks))
	}
	base, daemonBase := peaks[0], rss(t, d.cmd.Process.Pid)
	t.Logf("a normal sound's decoder: %d MiB at its peak; the daemon: %d MiB", base>>20, daemonBase>>20)
	daemonPeak := daemonBase

	for _, c := range []struct {
		name, by, url, class string
		signal               string // for the fake ffmpeg, once it plays
		want                 string // in play_media's error, or in last_ended
	}{
		{"4 Hz", "owner", filepath.Join(dir, "4hz.wav"), "media", "", "4 Hz"},
		{"1 Hz, the model's announcement", "model", srv.URL + "/1hz.wav", "announcement", "", "1 Hz"},
		{"64 channels", "model", srv.URL + "/64ch.wav", "media", "", "64 channels"},
		{"frames that lie about their rate", "owner", lie, "media", "", "memory bound"},
		{"a header that claims 4 GB", "owner", srv.URL + "/claims4gb.wav", "media", "", "played to the end"},
		{"a stream that stalls", "model", srv.URL + "/stall", "media", "", "stalled"},
		{"a decoder that hangs", "owner", srv.URL + "/radio", "media", "STOP", "hung"},
		{"a decoder that crashes", "owner", srv.URL + "/radio", "media", "SEGV", "segmentation fault"},
	} {
		before := len(decoderPeaks(d))
		ok, msg := play(c.by, c.url, c.class)
		if ok && c.signal != "" {
			waitMediaPosition(t, sim, 1)
			signal(c.signal)
		}
		if ok {
			msg = waitMediaEnded(t, sim, c.name)
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, msg, c.want)
		}
		// Each decoder ended and logged its peak.
		peaks := decodersEnded(t, d, c.name, before)
		for _, p := range peaks[before:] {
			if p > decoderBound+base {
				t.Errorf("%s: the decoder reached %d MiB, over its bound (%d MiB) and a normal decoder's %d MiB",
					c.name, p>>20, decoderBound>>20, base>>20)
			}
		}
		daemon := rss(t, d.cmd.Process.Pid)
		daemonPeak = max(daemonPeak, daemon)
		t.Logf("%-34s decoder %3d MiB, daemon %3d MiB: %s", c.name+":", peaks[len(peaks)-1]>>20, daemon>>20, msg)
		if out, err := d.cli("status"); err != nil {
			t.Fatalf("%s: agenthost status: %v\n%s", c.name, err, out)
		}
	}
	if grew := daemonPeak - daemonBase; grew > 48<<20 {
		t.Errorf("the daemon's memory grew by %d MiB (from %d MiB), want it flat", grew>>20, daemonBase>>20)
	}
	// The speaker still answers: a spoken turn, its reply played.
	if out, err := d.cli("talk", "start"); err != nil {
		t.Fatalf("talk start: %v\n%s", err, out)
	}
	out, err := d.cli("talk", "stop")
	task := sentOnTask.FindStringSubmatch(out)
	if err != nil || task == nil {
		t.Fatalf("talk stop: %v\n%s", err, out)
	}
	waitFor(t, sim, "the reply", func() bool { return replyEnded(sim, 1, task[1]) })
	d.waitPlayed("voice", 0.9)
}

// decodersEnded waits until the plugin logged more than before decoders'
// ends (the log reaches the test through a pipe, after the status the
// simulator read) and returns their peaks.
func decodersEnded(t *testing.T, d *hostProc, what string, before int) []int64 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if peaks := decoderPeaks(d); len(peaks) > before {
			return peaks
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the plugin logged no decoder's end", what)
		}
	}
}

// decoderPeaks are the media plugin's decoders' peak resident memory
// (bytes), as it logged each one's end (the kernel's count for the waited
// child, its VmHWM).
func decoderPeaks(d *hostProc) []int64 {
	var out []int64
	for _, m := range regexp.MustCompile(`the decoder ended.*?peak_rss_kib=(\d+)`).FindAllStringSubmatch(d.log.String(), -1) {
		kb, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, kb<<10)
	}
	return out
}

// rss is the resident memory (bytes) of process pid.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}
