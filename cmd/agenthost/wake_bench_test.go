package main

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
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

// BenchmarkWakeWordIdle is the whole daemon with the wake word on and the
// capture stages on (echo cancellation, noise suppression), linked to the
// simulator, its file microphone hearing a quiet room (digital silence), a
// fan (sox's pink noise low-passed at 500 Hz, -40 dBFS RMS) and speech
// half the time (sentences and pauses over a -65 dBFS hiss); each with
// conversation.wake_word.gate on and off. It reports the CPU of the host
// and of its detector (the run time of every thread, in nanoseconds, from
// /proc/PID/task/*/schedstat; /proc/PID/stat's 10 ms ticks were 12 in a
// minute of a silent room) as a share of one core, over
// WAKE_BENCH_SECONDS (60) after a 20 s warm-up (the detector's load, the
// gate hearing the room). Figures only:
//
//	go test -run='^$' -bench=WakeWordIdle -benchtime=1x ./cmd/agenthost/
//
// With $WAKE_BENCH_BEFORE naming another host binary (built with -tags
// testkit, e.g. from an older commit), it runs that one too, each scene
// before/… then after/…, for figures in one run.
func BenchmarkWakeWordIdle(b *testing.B) {
	secs := 60
	if s := os.Getenv("WAKE_BENCH_SECONDS"); s != "" {
		secs, _ = strconv.Atoi(s)
	}
	const warm = 20
	n := (warm + secs + 15) * 16000
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	scenes := []struct {
		name string
		pcm  []int16
	}{
		{"silence", make([]int16, n)},
		{"fan", soxFan(b, n, -40)},
		{"speech-half", speechHalf(b, rng, n)},
	}
	extra := strings.Fields(os.Getenv("WAKE_BENCH_SETS"))
	type host struct{ name, bin string }
	hosts := []host{{"", testbinHost(b)}}
	if old := os.Getenv("WAKE_BENCH_BEFORE"); old != "" {
		hosts = []host{{"before/", old}, {"after/", hosts[0].bin}}
	}
	for _, sc := range scenes {
		in := filepath.Join(dir, sc.name+".s16")
		if err := audiotest.WriteRaw(in, sc.pcm); err != nil {
			b.Fatal(err)
		}
		for _, gate := range []bool{true, false} {
			for _, h := range hosts {
				b.Run(fmt.Sprintf("%s%s/gate=%v", h.name, sc.name, gate), func(b *testing.B) {
					for b.Loop() {
						sim, err := voicetest.NewServer(voicetest.Options{})
						if err != nil {
							b.Fatal(err)
						}
						defer sim.Close()
						d := startHostBin(b, h.bin, sim, nil, append(append(wakeSets(b, in), "log.level="+cmp.Or(os.Getenv("WAKE_BENCH_LOG"), "warn"),
							"audio.capture.echo_cancel=true", "audio.capture.noise_suppression=true", "audio.output_file="+filepath.Join(b.TempDir(), "out.wav"),
							"conversation.wake_word.gate="+strconv.FormatBool(gate)), extra...)...) // $WAKE_BENCH_SETS: more, e.g. a stage off
						host := d.cmd.Process.Pid
						det := waitChild(b, host, "agenthost-wake")
						time.Sleep(warm * time.Second)
						if strings.Contains(d.log.String(), "no microphone") {
							b.Fatalf("the host hears nothing:\n%s", d.log)
						}
						h0, c0, t0 := cpuSeconds(b, host), cpuSeconds(b, det), time.Now()
						time.Sleep(time.Duration(secs) * time.Second)
						h1, c1, wall := cpuSeconds(b, host), cpuSeconds(b, det), time.Since(t0).Seconds()
						share := func(s float64) float64 { return s / wall * 100 }
						b.ReportMetric(share(h1-h0+c1-c0), "%core-daemon+detector")
						b.ReportMetric(share(h1-h0), "%core-daemon")
						b.ReportMetric(share(c1-c0), "%core-detector")
						b.Logf("%s, gate %v, %d s: daemon + detector %.3f%% of one core (daemon %.3f%%, detector %.3f%%)",
							sc.name, gate, secs, share(h1-h0+c1-c0), share(h1-h0), share(c1-c0))
						if os.Getenv("WAKE_BENCH_LOG") != "" {
							b.Logf("host log:\n%s", d.log)
						}
						d.stop()
					}
				})
			}
		}
	}
}

// soxFan is n samples of sox's pink noise low-passed at 500 Hz, scaled to
// dbfs RMS: a fan.
func soxFan(b *testing.B, n int, dbfs float64) []int16 {
	out := filepath.Join(b.TempDir(), "fan.s16")
	cmd := exec.Command("sox", "-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", out,
		"synth", strconv.Itoa(n/16000+1), "pinknoise", "lowpass", "500")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("sox: %v: %s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	v := make([]float64, n)
	var sum float64
	for i := range v {
		v[i] = float64(int16(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8))
		sum += v[i] * v[i]
	}
	g := math.Pow(10, dbfs/20) * 32768 / math.Sqrt(sum/float64(n))
	pcm := make([]int16, n)
	for i, x := range v {
		pcm[i] = int16(max(-32768, min(32767, math.Round(g*x))))
	}
	return pcm
}

// speechHalf is sentences and pauses of the same length, over a hiss.
func speechHalf(b *testing.B, rng *rand.Rand, n int) []int16 {
	var speech [][]int16
	for i, s := range []string{"The weather tomorrow will be cloudy with a chance of rain in the afternoon.",
		"Please add milk, eggs and bread to the shopping list.", "The train to Edinburgh leaves from platform four."} {
		speech = append(speech, audiotest.Say(b, audiotest.SpeechOptions{Voice: []string{"en-us", "en-gb"}[i%2], WPM: 150}, s))
	}
	a := math.Pow(10, -65.0/20) * 32768
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(max(-32768, min(32767, math.Round(a*rng.NormFloat64()))))
	}
	for at, k := 0, 0; ; k++ {
		s := speech[k%len(speech)]
		if at+2*len(s) > n {
			break
		}
		for i, v := range s {
			pcm[at+i] = int16(max(-32768, min(32767, int(pcm[at+i])+int(v))))
		}
		at += 2 * len(s)
	}
	return pcm
}

// waitChild is the pid of ppid's child whose name starts with comm.
func waitChild(b *testing.B, ppid int, comm string) int {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range childrenOf(ppid) {
			if name, _, _, ok := procStat(pid); ok && strings.HasPrefix(name, comm[:min(len(comm), 15)]) {
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("no child %s of %d", comm, ppid)
	return 0
}

// childrenOf lists the pids whose parent is ppid.
func childrenOf(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, parent, _, ok := procStat(pid); ok && parent == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// ticks is a process's utime+stime, in USER_HZ (10 ms) ticks.
func ticks(b *testing.B, pid int) int64 {
	_, _, t, ok := procStat(pid)
	if !ok {
		b.Fatalf("process %d is gone", pid)
	}
	return t
}

// procStat reads a process's name, parent and utime+stime (in 10 ms
// ticks) from /proc/PID/stat; ok is false once it is gone.
func procStat(pid int) (comm string, ppid int, ticks int64, ok bool) {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	st := string(s)
	open, end := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
	if open < 0 || end < 0 || end+2 > len(st) {
		return "", 0, 0, false
	}
	f := strings.Fields(st[end+2:])
	if len(f) < 13 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return st[open+1 : end], ppid, u + k, true
}
