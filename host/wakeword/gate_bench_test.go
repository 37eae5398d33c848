package wakeword

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/audio/capture"
	"github.com/agenthost/agenthost/audio/gate"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// BenchmarkGatedFrontEnd is BenchmarkFrontEnd's work without its clock:
// its rooms (replies, quiet) and one where nobody speaks (empty), through
// the echo canceller and the noise suppressor, the gate (as Detector.Feed
// runs it) and the detector's models with the shipped settings (in this
// process, as cmd/agenthost-wakeword runs them), as fast as they go, with
// the gate on and off. It reports each stage's CPU (getrusage) as a share
// of one core for the audio's length, the model runs (embeddings) the gate
// let through and the detections. Figures only, no assertion. Under
// emulation (scripts/bench-arm64-gate.sh: arm64 under qemu-user, where the
// real-time benchmark's detector cannot keep up) only the ratios between
// rooms mean something:
//
//	go test ./host/wakeword/ -run '^$' -bench GatedFrontEnd -benchtime 1x
func BenchmarkGatedFrontEnd(b *testing.B) {
	for _, room := range []string{"empty", "quiet", "replies"} {
		for _, on := range []bool{true, false} {
			b.Run(fmt.Sprintf("room=%s/gate=%v", room, on), func(b *testing.B) { gatedFrontEnd(b, room, on) })
		}
	}
}

func gatedFrontEnd(b *testing.B, room string, on bool) {
	const rate, frame = wakeword.Rate, 960
	dur := benchLength(b, 40*time.Second)
	mic, far, ends := frontEndRoom(b, dur, room)
	rt := &countingRuntime{Runtime: openRuntimeB(b)}
	for b.Loop() {
		echo, err := capture.NewEcho(nil, capture.EchoOptions{Rate: rate, MaxDelay: capture.DefaultMaxDelay})
		if err != nil {
			b.Fatal(err)
		}
		den, err := capture.NewDenoise(rate, -20)
		if err != nil {
			b.Fatal(err)
		}
		g, err := gate.New(gate.Config{Rate: rate, Align: wakeword.Hop})
		if err != nil {
			b.Fatal(err)
		}
		det, err := wakeword.NewDetectorWith(rt, []string{"hey_jarvis"}, wakeword.Shipped)
		if err != nil {
			b.Fatal(err)
		}
		rt.embeds = 0
		// One stage at a time over the whole room, so that each one's CPU
		// is its own: what the capture hands on, what the gate hands on.
		clean := append([]int16(nil), mic...)
		c0 := cpuNow()
		for i := 0; i+160 <= len(clean); i += 160 {
			f := capture.Frame{PCM: clean[i : i+160]}
			echo.Cancel(f.PCM, far[i:i+160])
			den.Process(&f)
		}
		c1 := cpuNow()
		type chunk struct {
			pos int64
			pcm []int16
		}
		var handed []chunk
		for i := 0; i+frame <= len(clean); i += frame {
			if !on {
				handed = append(handed, chunk{int64(i), clean[i : i+frame]})
				continue
			}
			g.Push(int64(i), clean[i:i+frame], func(pos int64, pcm []int16) {
				handed = append(handed, chunk{pos, pcm})
			})
		}
		c2 := cpuNow()
		var found []wakeword.Detection
		heard := 0
		for _, c := range handed {
			heard += len(c.pcm)
			d, err := det.Feed(c.pos, c.pcm)
			if err != nil {
				b.Fatal(err)
			}
			found = append(found, d...)
		}
		c3 := cpuNow()
		echo.Close()
		den.Close()
		share := func(c time.Duration) float64 { return 100 * c.Seconds() / dur.Seconds() }
		b.ReportMetric(share(c3-c0), "%core-front-end")
		b.ReportMetric(share(c1-c0), "%core-cancel+suppress")
		b.ReportMetric(share(c2-c1), "%core-gate")
		b.ReportMetric(share(c3-c2), "%core-models")
		b.ReportMetric(float64(rt.embeds), "model-runs")
		b.ReportMetric(100*float64(heard)/float64(len(clean)), "%audio-to-detector")
		b.ReportMetric(float64(len(found)), "detections")
		b.Logf("%s room, %s of audio, gate %v: the detector heard %.0f%% of it, %d model runs (embeddings), %d of %d phrases detected; CPU as a share of one core: front end %.2f%% (cancel+suppress %.2f%%, gate %.3f%%, models %.2f%%)",
			room, dur, on, 100*float64(heard)/float64(len(clean)), rt.embeds, len(found), len(ends), share(c3-c0), share(c1-c0), share(c2-c1), share(c3-c2))
	}
}

// countingRuntime counts the embedding model's runs: one per step of the
// detector, each followed by the wake model's.
type countingRuntime struct {
	wakeword.Runtime
	embeds int
}

func (r *countingRuntime) Embed(mel []float32) ([]float32, error) {
	r.embeds++
	return r.Runtime.Embed(mel)
}

// openRuntimeB loads the fetched models (hey_jarvis) in this process, on
// the library settingsB names.
func openRuntimeB(b *testing.B) *ort.Runtime {
	s := settingsB(b)
	if _, err := ort.Init(s.ONNXRuntime); err != nil {
		b.Fatal(err)
	}
	f := wakewordtest.Fetch(b)
	rt, err := ort.Open(ort.Paths{Mel: f.Model("melspectrogram"), Embedding: f.Model("embedding_model"), Wake: []string{f.Model("hey_jarvis")}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rt.Close)
	return rt
}

// cpuNow is this process's user+system CPU time so far (getrusage: under
// qemu-user, the emulator's, where /proc/self/stat reads zero).
func cpuNow() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
