package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	hostconfig "github.com/agenthost/agenthost/config"
)

// BenchmarkMediaPlugin plays 60 s of 44.1 kHz stereo MP3 (a chord made with
// sox, encoded by lame) from a loopback HTTP server through the real plugin
// into the recording output, which takes it as fast as it comes, and prints:
// the plugin's and its ffmpeg's CPU time per second of sound (the share of
// one core they need to play it in real time, resampling to 48 kHz
// included; the mixer's share is not in it), and the plugin's resident
// memory idle and while playing (ffmpeg's while playing).
//
//	go test -run '^$' -bench BenchmarkMediaPlugin -benchtime 1x ./plugins/media
func BenchmarkMediaPlugin(b *testing.B) {
	dir := b.TempDir()
	wav, mp3 := filepath.Join(dir, "music.wav"), filepath.Join(dir, "music.mp3")
	for _, s := range [][]string{
		{"sox", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "60", "sine", "262", "sine", "330", "tremolo", "4", "60", "vol", "0.4"},
		{"lame", "--quiet", "-b", "192", wav, mp3},
		{"cp", mp3, filepath.Join(dir, "tone.mp3")}, // the server's radio loops it
	} {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	srv := server(b, dir)
	h := startHost(b, map[string]any{}, func(p *hostconfig.Plugins) { p.Lazy = false }) // idle memory needs a process
	pid := h.pluginPID()
	idle := rssKiB(b, pid)
	for i := 0; i < b.N; i++ {
		before := cpuTicks(b, pid)
		h.mustCall("play_media", map[string]any{"url": srv.URL + "/files/music.mp3"})
		s := h.stream(i + 1)
		kids := h.children()
		var ffmpegRSS, playing int
		if len(kids) == 1 {
			ffmpegPID, _ := strconv.Atoi(strings.Fields(kids[0])[0])
			ffmpegRSS, playing = rssKiB(b, ffmpegPID), rssKiB(b, pid)
		}
		select {
		case <-s.Ended():
		case <-time.After(5 * time.Minute):
			b.Fatal("the music never ended")
		}
		for h.children() != nil { // ffmpeg reaped: its time is in the plugin's cutime
			time.Sleep(10 * time.Millisecond)
		}
		_, total, _ := s.Samples()
		secs := float64(total) / 2 / 48000
		cpu := float64(cpuTicks(b, pid)-before) / 100 // USER_HZ
		b.ReportMetric(100*cpu/secs, "%core")
		fmt.Printf("media plugin: %.1f s of 44.1 kHz stereo MP3 took %.2f s CPU (plugin + ffmpeg): %.1f%% of one core in real time; RSS idle %d KiB, playing %d KiB plugin + %d KiB ffmpeg\n",
			secs, cpu, 100*cpu/secs, idle, playing, ffmpegRSS)
	}
}

func (h *host) pluginPID() int {
	for _, s := range h.m.Status() {
		if s.Name == "media" {
			return s.PID
		}
	}
	h.t.Fatal("the media plugin is not running")
	return 0
}

// cpuTicks is utime+stime+cutime+cstime of pid, in clock ticks.
func cpuTicks(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var sum int64
	for _, i := range []int{11, 12, 13, 14} { // fields 14..17 of stat, after pid and comm
		n, _ := strconv.ParseInt(f[i], 10, 64)
		sum += n
	}
	return sum
}

func rssKiB(tb testing.TB, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
