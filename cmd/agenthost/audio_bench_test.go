package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/speaker"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkAudioStreaming runs the real host with the file audio backend in
// push-to-talk mode and reports, for PCM and Opus uplink: the host's CPU
// seconds per minute of streamed audio (and as % of one core, over the 20 s
// from just after the host started and over the last 10 s of them), and the time
// from `talk stop` on the control socket to END_FRAME arriving at the simulator.
//
//	go test -run='^$' -bench=AudioStreaming -benchtime=1x ./cmd/agenthost/
//
// With $STREAM_BENCH_BEFORE naming another host binary (built with -tags
// testkit, e.g. from an older commit), it runs that one too, first, as
// before/pcm, before/opus, for figures in one run.
//
// Beside the PCM stream, in the same windows, `arecord` (alsa-utils) records
// the same audio at the same rate and format (S16_LE, 16 kHz, mono, 60 ms
// periods) from a headless ALSA device whose input is a FIFO that the
// benchmark fills in real time, 60 ms at a time: arecord-%-of-one-core is the
// floor, what the plainest capture program takes to wake for each period and
// move its bytes (the FIFO's filler is the "device", not counted); a second
// arecord writes the same into a loopback TCP connection read in this
// process (arecord-tcp-…), as the host writes to the simulator: the floor
// with the kernel's cost of sending included.
//
// Issue 27 (one run, busy 2-core machine, before = bc24656): PCM 0.517% →
// 0.278% of a core (steady 0.464% → 0.240%), Opus 1.135% → 0.952%; per
// 60 ms PCM frame (perf stat -e 'syscalls:sys_enter_*,context-switches'
// -p PID) 14.8 → 2.3 context switches, 6.7 → 0.2 nanosleeps (sysmon), 4.0 →
// 0.2 futex, 0.5 → 0 preemption signals; talk-stop→END unchanged. Later
// (one run, before = main 439f1b4): PCM steady 0.266% → 0.266% of a core
// beside arecord's 0.09–0.10% (its floor), Opus 1.053% → 0.924%; per frame
// read(2) 2.1 → 1.1 (the timerfd is armed inside the poller's read).
// Issue 27 again (two runs, helpers paused, before = e4e7857): nothing
// allocated per frame any more (the encoder's buffer, the raw writer's and
// the timerfd's callbacks: 7 allocations, ~2 kB): PCM 0.390/0.313% →
// 0.282/0.279% of a core, beside arecord-tcp's 0.16/0.15%.
func BenchmarkAudioStreaming(b *testing.B) {
	type host struct{ name, bin string }
	hosts := []host{{"", testbinHost(b)}}
	if old := os.Getenv("STREAM_BENCH_BEFORE"); old != "" {
		hosts = []host{{"before/", old}, {"after/", hosts[0].bin}}
	}
	for _, h := range hosts {
		audioStreaming(b, h.name, h.bin)
	}
}

func audioStreaming(b *testing.B, prefix, bin string) {
	clip := audiotest.Speech(b, "Hello speaker. This is a longer sentence so that there is speech to encode.")
	var long []int16
	for len(long) < 16000*14 {
		long = append(long, clip.Samples...)
	}
	in := filepath.Join(b.TempDir(), "mic.s16")
	if err := audiotest.WriteRaw(in, long); err != nil {
		b.Fatal(err)
	}
	for _, codec := range []string{"pcm", "opus"} {
		b.Run(prefix+codec, func(b *testing.B) {
			sim, err := voicetest.NewServer(voicetest.Options{ReplyDuration: 60 * time.Millisecond, Faults: voicetest.Faults{WithholdReplies: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer sim.Close()
			d := startHostBin(b, bin, sim, nil, "log.level=warn", "audio.backend=file", "audio.input_file="+in,
				"server.params.input_audio_format="+codec)
			ctx := context.Background()
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			if err := sim.WaitFor(wctx, func() bool { return len(sim.Registers()) == 1 }); err != nil {
				b.Fatal(err)
			}
			cl := control.NewClient(filepath.Join(d.dir, "run", "control.sock"))
			talk := func(action string) string {
				var out struct{ Task string }
				if err := cl.Do(ctx, "POST /v1/talk", speaker.TalkRequest{Action: action}, &out); err != nil {
					b.Fatal(err)
				}
				return out.Task
			}
			// CPU while streaming 20 s of audio.
			pid := d.cmd.Process.Pid
			floor, floorTCP := 0, 0 // arecord's pids, beside PCM
			if codec == "pcm" {
				floor, floorTCP = startArecord(b, in, false), startArecord(b, in, true)
			}
			talk("start")
			time.Sleep(500 * time.Millisecond)
			cpu0, t0 := cpuSeconds(b, pid), time.Now()
			var f0, fMid, g0, gMid float64
			if floor != 0 {
				f0, g0 = cpuSeconds(b, floor), cpuSeconds(b, floorTCP)
			}
			time.Sleep(10 * time.Second)
			cpuMid, tMid := cpuSeconds(b, pid), time.Now()
			if floor != 0 {
				fMid, gMid = cpuSeconds(b, floor), cpuSeconds(b, floorTCP)
			}
			time.Sleep(10 * time.Second)
			cpu1, wall := cpuSeconds(b, pid), time.Since(t0).Seconds()
			if floor != 0 {
				f1, g1 := cpuSeconds(b, floor), cpuSeconds(b, floorTCP)
				b.ReportMetric((f1-f0)/wall*100, "arecord-%-of-one-core")
				b.ReportMetric((f1-fMid)/time.Since(tMid).Seconds()*100, "arecord-steady-%-of-one-core")
				b.ReportMetric((g1-g0)/wall*100, "arecord-tcp-%-of-one-core")
				b.ReportMetric((g1-gMid)/time.Since(tMid).Seconds()*100, "arecord-tcp-steady-%-of-one-core")
			}
			task := talk("stop")
			perMinute := (cpu1 - cpu0) / wall * 60
			b.ReportMetric(perMinute, "cpu-s/min-audio")
			b.ReportMetric(perMinute/60*100, "%-of-one-core")
			// The first seconds also hold the host's start-up: its first
			// garbage collections and the idle trim 5 s after it started
			// (it has had no call), which drops code pages that streaming
			// then faults back in. The second half is streaming alone.
			b.ReportMetric((cpu1-cpuMid)/time.Since(tMid).Seconds()*100, "steady-%-of-one-core")
			waitEnd(b, sim, task)

			// Turn end → END_FRAME on the wire.
			var lat []time.Duration
			for range 20 {
				talk("start")
				time.Sleep(100 * time.Millisecond)
				start := time.Now()
				task := talk("stop")
				waitEnd(b, sim, task)
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "talk-stop→END-p50-µs")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "talk-stop→END-max-µs")
		})
	}
}

// startArecord runs `arecord` on the raw 16 kHz mono file in (looped) fed
// through a FIFO in real time, 60 ms at a time, until the benchmark ends,
// and returns its pid. It writes what it records to /dev/null, or with
// toTCP into a loopback TCP connection that a goroutine here reads, as the
// simulator reads the host's link: the same bytes on the same path, so the
// kernel's share of sending them is in that floor too.
func startArecord(b *testing.B, in string, toTCP bool) int {
	if _, err := exec.LookPath("arecord"); err != nil {
		b.Skip("arecord is not installed (apt-get install alsa-utils)")
	}
	pcm, err := os.ReadFile(in)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	fifo := filepath.Join(dir, "mic.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	conf, err := audiotest.WriteALSAConfig(dir, audiotest.ALSADevice{Name: "default", Capture: fifo})
	if err != nil {
		b.Fatal(err)
	}
	dest := os.DevNull
	var out testbin.Buffer
	var sock *os.File
	if toTCP {
		dest, sock = "-", dialDiscard(b)
	}
	cmd := exec.Command("arecord", "-q", "-t", "raw", "-f", "S16_LE", "-r", "16000", "-c", "1",
		"--period-size=960", "--buffer-size=3840", dest)
	cmd.Env = append(os.Environ(), "ALSA_CONFIG_PATH="+conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if sock != nil {
		cmd.Stdout = sock
	}
	err = cmd.Start()
	if sock != nil {
		sock.Close() // arecord has its own
	}
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	fed := make(chan struct{})
	go func() { // the device: 60 ms every 60 ms
		defer close(fed)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		const chunk = 2 * 960
		next := time.Now()
		for off := 0; ; off = (off + chunk) % (len(pcm) / chunk * chunk) {
			if _, err := w.Write(pcm[off : off+chunk]); err != nil {
				return
			}
			next = next.Add(60 * time.Millisecond)
			select {
			case <-done:
				return
			case <-time.After(time.Until(next)):
			}
		}
	}()
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		// A reader, so that a feeder still waiting to open the FIFO
		// (arecord failed) gets it and ends.
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		close(done)
		<-fed
		if err == nil {
			r.Close()
		}
		if b.Failed() {
			b.Logf("arecord: %s", &out)
		}
	})
	return cmd.Process.Pid
}

// dialDiscard is one end of a loopback TCP connection whose other end a
// goroutine reads and drops until the benchmark ends.
func dialDiscard(b *testing.B) *os.File {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { peer.Close() })
	go io.Copy(io.Discard, peer)
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		b.Fatal(err)
	}
	return f
}

func waitEnd(b *testing.B, sim *voicetest.Server, task string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := sim.WaitFor(ctx, func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeEnd && r.Frame.Task == task {
				return true
			}
		}
		return false
	})
	if err != nil {
		b.Fatal(err)
	}
}

// cpuSeconds is the CPU time of all the process's threads, from their
// schedstat (nanoseconds; /proc/PID/stat counts 10 ms ticks, too coarse for
// a fraction of a percent).
func cpuSeconds(b testing.TB, pid int) float64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	var ns float64
	for _, t := range tasks {
		s, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread has gone
		}
		if f := strings.Fields(string(s)); len(f) > 0 {
			v, _ := strconv.ParseFloat(f[0], 64)
			ns += v
		}
	}
	return ns / 1e9
}
