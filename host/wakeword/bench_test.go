package wakeword

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/capture"
	"github.com/agenthost/agenthost/audio/echoroom"
	"github.com/agenthost/agenthost/audio/vad"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
)

// BenchmarkFrontEnd is the always-on microphone path of a speaker with
// the wake word, in real time: someone says "hey jarvis" every 8 s, in a
// room where the speaker's replies echo (room=replies) or in a quiet one
// (room=quiet: the phrase is the first sound after 6 s), through the echo
// canceller and the noise suppressor (this process) into the detector
// (its own process, as the daemon runs it), with the gate off and on. It
// reports the CPU of the whole front end as a share of one core, the
// detection latency after the phrase's end (p50, p95), and the detector's
// RSS. Figures only, no assertion:
//
//	go test ./host/wakeword/ -run '^$' -bench FrontEnd -benchtime 1x
func BenchmarkFrontEnd(b *testing.B) {
	for _, room := range []string{"replies", "quiet"} {
		for _, gate := range []bool{false, true} {
			b.Run(fmt.Sprintf("room=%s/gate=%v", room, gate), func(b *testing.B) { frontEnd(b, room == "quiet", gate) })
		}
	}
}

func frontEnd(b *testing.B, quiet, gate bool) {
	const rate = 16000
	dur := benchLength(b, 90*time.Second)
	f := settingsB(b)
	f.Gate = gate
	kind := "replies"
	if quiet {
		kind = "quiet"
	}
	mic, far, ends := frontEndRoom(b, dur, kind)
	n := len(mic)

	detected := make(chan time.Time, 64)
	d := New(Options{Command: testbin.BuildRelease(b, "./cmd/agenthost-wakeword"), Settings: f, Log: slog.New(slog.DiscardHandler),
		OnWake: func(wakeword.Detection) { detected <- time.Now() }})
	done := make(chan struct{})
	ctx, cancel := contextB()
	go func() { defer close(done); d.Run(ctx, func() {}) }()
	defer func() { cancel(); <-done }()
	<-d.Settled()
	st := d.Status()
	if !st.On {
		b.Fatalf("the detector does not run: %s", st.Why)
	}
	echo, err := capture.NewEcho(nil, capture.EchoOptions{Rate: rate, MaxDelay: capture.DefaultMaxDelay})
	if err != nil {
		b.Fatal(err)
	}
	defer echo.Close()
	den, err := capture.NewDenoise(rate, -20)
	if err != nil {
		b.Fatal(err)
	}
	defer den.Close()

	for b.Loop() {
		selfCPU, childCPU := cpuOf(os.Getpid()), cpuOf(st.PID)
		start := time.Now()
		fed := make([]time.Time, 0, len(ends)) // when each phrase end was captured
		next := 0
		frame := make([]int16, 960)
		for i := 0; i+960 <= n; i += 960 {
			due := start.Add(time.Duration(i+960) * time.Second / rate)
			time.Sleep(time.Until(due))
			copy(frame, mic[i:i+960])
			for k := 0; k < 960; k += 160 {
				f := capture.Frame{PCM: frame[k : k+160]}
				echo.Cancel(f.PCM, far[i+k:i+k+160])
				den.Process(&f)
			}
			d.Feed(int64(i), frame, false)
			for next < len(ends) && ends[next] <= i+960 {
				fed = append(fed, due.Add(-time.Duration(i+960-ends[next])*time.Second/rate))
				next++
			}
		}
		time.Sleep(time.Second) // the last detections
		wall := time.Since(start)
		self, child := cpuOf(os.Getpid())-selfCPU, cpuOf(st.PID)-childCPU
		var lat []float64
		close(detected)
		for t := range detected {
			// The latest phrase end captured before the detection.
			k := sort.Search(len(fed), func(j int) bool { return fed[j].After(t) }) - 1
			if k >= 0 {
				lat = append(lat, float64(t.Sub(fed[k]).Milliseconds()))
			}
		}
		sort.Float64s(lat)
		mem, _ := procs.Memory(st.PID)
		share := func(c time.Duration) float64 { return 100 * c.Seconds() / wall.Seconds() }
		b.ReportMetric(share(self+child), "%core-front-end")
		b.ReportMetric(share(self), "%core-cancel+suppress")
		b.ReportMetric(share(child), "%core-detector")
		b.ReportMetric(pct(lat, 50), "ms-latency-p50")
		b.ReportMetric(pct(lat, 95), "ms-latency-p95")
		b.ReportMetric(float64(mem.RSS)/(1<<20), "MiB-detector-RSS")
		b.Logf("%s of audio in real time, gate %v, %.0f s held back: front end %.2f%% of one core (cancel+suppress and feeding %.2f%%, detector %.2f%%); %d of %d phrases detected, latency after the phrase's end p50 %.0f ms, p95 %.0f ms (%v); detector RSS %.1f MiB (ONNX Runtime %s)",
			dur, gate, d.Status().GatedSeconds, share(self+child), share(self), share(child), len(lat), len(ends), pct(lat, 50), pct(lat, 95), lat, float64(mem.RSS)/(1<<20), st.ONNXRuntime)
	}
}

// benchLength is the benchmarks' room length: $AGENTHOST_BENCH_SECONDS,
// else def.
func benchLength(b *testing.B, def time.Duration) time.Duration {
	s := os.Getenv("AGENTHOST_BENCH_SECONDS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("AGENTHOST_BENCH_SECONDS=%q: want a whole number of seconds above 0", s)
	}
	return time.Duration(n) * time.Second
}

// frontEndRoom is BenchmarkFrontEnd's room, dur long, at 16 kHz: "hey
// jarvis" every 8 s from 3 s on, and after each phrase the speaker's reply
// (kind "replies"); only the phrases ("quiet"); or nobody speaking at all
// ("empty"). It returns what the microphone hears, what the speaker plays
// and where each phrase's voice ends.
func frontEndRoom(b *testing.B, dur time.Duration, kind string) (mic, far []int16, ends []int) {
	const rate = 16000
	phrase := audiotest.Say(b, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	phrase = phrase[:voicedEndB(phrase)]
	reply := audiotest.Say(b, audiotest.SpeechOptions{Voice: "en-us", WPM: 170}, "It is twenty past four. The weather stays dry until the evening, with light winds from the west.")
	n := int(dur.Seconds()) * rate
	far = make([]int16, n)
	near := make([]int16, n)
	for at := 3 * rate; at+len(phrase) < n && kind != "empty"; at += 8 * rate {
		copy(near[at:], phrase)
		ends = append(ends, at+len(phrase))
		if r := at + len(phrase) + rate; r+len(reply) < n && kind == "replies" {
			copy(far[r:], reply) // the speaker answers; its echo comes back
		}
	}
	room := echoroom.Room{Delay: 60 * time.Millisecond, Gain: -10, Noise: -60, Seed: 7}
	return room.Render(far, near).Mic, far, ends
}

func pct(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, (len(sorted)*p+99)/100-1)]
}

// cpuOf is a process's user+system CPU time so far.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100 // USER_HZ
}

func voicedEndB(p []int16) int {
	n := len(p) / 160 * 160
	for n > 0 && vad.DBFS(p[n-160:n]) < -45 {
		n -= 160
	}
	return n
}

func contextB() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// settingsB are the detector's settings with the fetched models and ONNX
// Runtime, or the library $AGENTHOST_TEST_ONNXRUNTIME names (another
// architecture's, for scripts/bench-arm64-gate.sh).
func settingsB(b testing.TB) Settings {
	f := wakewordtest.Fetch(b)
	lib := f.ONNXRuntime
	if l := os.Getenv("AGENTHOST_TEST_ONNXRUNTIME"); l != "" {
		lib = l
	}
	return Settings{Models: []string{"hey_jarvis"}, Threshold: 0.5, Dir: f.Dir, ONNXRuntime: lib}
}
