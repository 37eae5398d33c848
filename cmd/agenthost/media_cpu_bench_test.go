package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkMediaCPUBesideMpg123 (issue 25's CPU figure): one 44.1 kHz
// stereo MP3 (sox's chords, lame at 192 kb/s, MEDIA_CPU_SECONDS long, 60
// by default) played in one run by the daemon (the bundled media plugin
// and its ffmpeg, the mixer, the echo canceller on, the file backend, which
// takes real time) and by `mpg123 -q` and `ffplay -nodisp` into a headless
// ALSA device (a 48 kHz stereo plug over the null device). ALSA's null
// device does not take real time, so the players' figure is their CPU per
// second of music: what they would take playing it in real time, less the
// wake-ups of pacing. The daemon's is daemon + plugin + ffmpeg over the
// time it played, less what the daemon takes idle with the canceller on
// (measured just before; the plugin stops while idle).
//
//	go test -run='^$' -bench=MediaCPUBesideMpg123 -benchtime=1x ./cmd/agenthost/
func BenchmarkMediaCPUBesideMpg123(b *testing.B) {
	secs := 60
	if s := os.Getenv("MEDIA_CPU_SECONDS"); s != "" {
		secs, _ = strconv.Atoi(s)
	}
	for _, tool := range []string{"mpg123", "ffplay", "sox", "lame"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not installed (apt-get install mpg123 ffmpeg sox lame)", tool)
		}
	}
	dir := b.TempDir()
	soxMusic(b, dir, secs)
	mp3 := filepath.Join(dir, "music.mp3")
	runCmd(b, "lame", "--quiet", "-b", "192", filepath.Join(dir, "chords.wav"), mp3)
	conf, err := audiotest.WriteALSAConfig(dir, audiotest.ALSADevice{Name: "default", Rate: 48000, Channels: 2})
	if err != nil {
		b.Fatal(err)
	}
	env := []string{"ALSA_CONFIG_PATH=" + conf}
	silence := filepath.Join(dir, "silence.s16")
	if err := audiotest.WriteRaw(silence, audiotest.Silence(16000, time.Second)); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	for b.Loop() {
		for _, p := range []struct {
			name string
			args []string
		}{
			{"mpg123", []string{"mpg123", "-q", "-o", "alsa", mp3}},
			{"ffplay", []string{"ffplay", "-nodisp", "-autoexit", "-loglevel", "quiet", mp3}},
		} {
			cmd := exec.Command(p.args[0], p.args[1:]...)
			cmd.Env = append(os.Environ(), append(env, "SDL_AUDIODRIVER=alsa")...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", p.name, err, out)
			}
			wall := time.Since(start)
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			b.ReportMetric(100*cpu.Seconds()/float64(secs), p.name+"-%core")
			b.Logf("%s: %.2f s of CPU for %d s of music (done in %.1f s): %.2f%% of one core in real time", p.name, cpu.Seconds(), secs, wall.Seconds(), 100*cpu.Seconds()/float64(secs))
		}

		sim, err := voicetest.NewServer(voicetest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer sim.Close()
		plugins := filepath.Join(b.TempDir(), "plugins")
		if err := os.Mkdir(plugins, 0o755); err != nil {
			b.Fatal(err)
		}
		copyExec(b, bundled(b, "media"), filepath.Join(plugins, "media"))
		d := startHostEnv(b, sim, nil, "plugins.dirs="+plugins, "services.builtins=false", "audio.backend=file",
			"audio.input_file="+silence, "audio.output_file="+filepath.Join(dir, "out.wav"), "audio.capture.echo_cancel=true", "server.params.mode=manual", "log.level=info")
		// The plugin stops while idle (plugins.idle_timeout); play starts
		// it again. Idle is the daemon's alone.
		const idleFor = 10 * time.Second
		t0, i0 := time.Now(), ticks(b, d.cmd.Process.Pid)
		time.Sleep(idleFor)
		idle := float64(ticks(b, d.cmd.Process.Pid)-i0) / 100 / time.Since(t0).Seconds()
		base := ticks(b, d.cmd.Process.Pid)
		start := time.Now()
		if out, err := d.cli("play", srv.URL+"/music.mp3"); err != nil {
			b.Fatalf("agenthost play: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`plugin=media .*pid=(\d+)`).FindAllStringSubmatch(d.log.String(), -1)
		if m == nil {
			b.Fatal("the media plugin did not start")
		}
		plugin, _ := strconv.Atoi(m[len(m)-1][1])
		seen := map[int]int64{} // the plugin's and its ffmpeg's ticks, last seen alive
		for mediaPlaying(b, d) && time.Since(start) < time.Duration(secs+30)*time.Second {
			for _, pid := range append(childrenOf(plugin), plugin) {
				if _, _, t, ok := procStat(pid); ok {
					seen[pid] = t
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		wall := time.Since(start).Seconds()
		total := float64(ticks(b, d.cmd.Process.Pid)-base) / 100
		for _, t := range seen {
			total += float64(t) / 100
		}
		share := 100 * (total/wall - idle)
		b.ReportMetric(share, "agenthost-%core")
		b.ReportMetric(100*idle, "daemon-idle-%core")
		b.Logf("agenthost (daemon + media plugin + ffmpeg): %.1f s of CPU in %.1f s played, %.2f%% of one core above its idle %.2f%%", total, wall, share, 100*idle)
		d.stop()
	}
}
