package capture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/echoroom"
)

// The figures of issue 17 (targets: ERLE ≥ 30 dB on the linear room and
// ≥ 20 dB on the clipped one, after 2 s; near speech correlation ≥ 0.8;
// the capture path ≤ 2% of one core). Run with
//
//	go test ./audio/capture/ -run '^$' -bench . -benchtime 1x
//
// Each figure is computed once per run; the time per op is not the figure.

type scene struct {
	name string
	room echoroom.Room
}

func scenes() []scene {
	var out []scene
	for _, d := range []time.Duration{20, 60, 120, 250} {
		out = append(out, scene{fmt.Sprintf("linear-%dms", d), linearRoom(d * time.Millisecond)})
	}
	for _, c := range []float64{0.5, 0.3} {
		out = append(out, scene{fmt.Sprintf("clipped%.1f-60ms", c), clippedRoom(60*time.Millisecond, c)})
	}
	return out
}

// BenchmarkEcho reports, per room, the ERLE after 2 s (as the canceller
// ships, and the filter alone, without the residual suppressor) and the
// correlation of the output with the near speech in double talk.
func BenchmarkEcho(b *testing.B) {
	far, near := voices(b)
	for _, sc := range scenes() {
		b.Run(sc.name, func(b *testing.B) {
			s := sc.room.Render(far, nil)
			dt := sc.room.Render(far, doubleTalk(far, near))
			var erle, filter, late, corr float64
			for b.Loop() {
				erle = echoroom.ERLE(s.Mic, cancel(b, s.Mic, far, EchoOptions{MaxDelay: DefaultMaxDelay}), settle)
				alone := cancel(b, s.Mic, far, EchoOptions{MaxDelay: DefaultMaxDelay, NoResidual: true})
				filter, late = echoroom.ERLE(s.Mic, alone, settle), echoroom.ERLE(s.Mic, alone, 8*rate)
				corr, _ = echoroom.Correlation(cancel(b, dt.Mic, far, EchoOptions{MaxDelay: DefaultMaxDelay}), dt.Near, nearStart, nearStart+len(near), rate/50)
			}
			b.ReportMetric(erle, "dB-ERLE")
			b.ReportMetric(filter, "dB-ERLE-filter")
			b.ReportMetric(late, "dB-ERLE-after8s")
			b.ReportMetric(corr, "near-corr")
		})
	}
}

// BenchmarkDenoise reports the suppressor's SNR gain on speech in a fan's
// noise, at three input SNRs.
func BenchmarkDenoise(b *testing.B) {
	far, _ := voices(b)
	clean := far[:12*rate]
	active := echoroom.Active(clean, frameLen, -30)
	for _, rms := range []float64{0.01, 0.03, 0.06} {
		noisy := mix(clean, fanNoise(len(clean), rms, 1))
		in := echoroom.SNR(noisy, active, frameLen)
		b.Run(fmt.Sprintf("snr%.0fdB", in), func(b *testing.B) {
			var gain float64
			for b.Loop() {
				d, err := NewDenoise(rate, DefaultDenoiseLevel)
				if err != nil {
					b.Fatal(err)
				}
				out := shiftBack(run(d, noisy), frameLen)
				d.Close()
				gain = echoroom.SNR(out, active, frameLen) - in
			}
			b.ReportMetric(gain, "dB-SNR-gain")
		})
	}
}

// BenchmarkCapturePath reports the CPU the whole capture path (cancel +
// suppress, the canceller with its delay search and residual suppressor)
// takes per minute of audio, as a share of one core: with a reply playing
// (and a voice over it), and in a quiet room (the speaker silent, the
// microphone hearing the room's noise).
func BenchmarkCapturePath(b *testing.B) {
	far, near := voices(b)
	room := linearRoom(60 * time.Millisecond)
	quiet := make([]int16, len(far))
	for _, sc := range []struct {
		name      string
		mic, play []int16
	}{
		{"reply", room.Render(far, doubleTalk(far, near)).Mic, far},
		{"quiet", room.Render(quiet, nil).Mic, quiet},
	} {
		b.Run(sc.name, func(b *testing.B) { benchCapturePath(b, sc.mic, sc.play) })
	}
}

func benchCapturePath(b *testing.B, mic, far []int16) {
	minute := 60 * rate / len(mic)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	for b.Loop() {
		e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
		if err != nil {
			b.Fatal(err)
		}
		d, err := NewDenoise(rate, DefaultDenoiseLevel)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]int16, frameLen)
		f := Frame{PCM: buf}
		start := threadCPU()
		for range minute + 1 {
			for i := 0; i+frameLen <= len(mic); i += frameLen {
				copy(buf, mic[i:])
				e.Cancel(buf, far[i:i+frameLen])
				d.Process(&f)
			}
		}
		cpu = threadCPU() - start
		e.Close()
		d.Close()
	}
	audioDur := time.Duration((minute+1)*len(mic)/frameLen) * FrameDuration
	b.ReportMetric(100*cpu.Seconds()/audioDur.Seconds(), "%-of-one-core")
	b.ReportMetric(cpu.Seconds()*60/audioDur.Seconds(), "cpu-s/audio-min")
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompare runs the same rooms through other cancellers, programs
// named in AGENTHOST_AEC_COMPARE as name=command,… (each command is called
// as `command FAR MIC OUT`, raw 16 kHz s16le files; scripts/aec-compare.sh
// builds WebRTC 0.3 and 1.3 ones). Skipped when the variable is unset.
func BenchmarkCompare(b *testing.B) {
	spec := os.Getenv("AGENTHOST_AEC_COMPARE")
	if spec == "" {
		b.Skip("AGENTHOST_AEC_COMPARE is not set (see scripts/aec-compare.sh)")
	}
	far, near := voices(b)
	dir := b.TempDir()
	farPath := filepath.Join(dir, "far.raw")
	if err := audiotest.WriteRaw(farPath, far); err != nil {
		b.Fatal(err)
	}
	for _, item := range strings.Split(spec, ",") {
		name, cmd, ok := strings.Cut(item, "=")
		if !ok {
			b.Fatalf("AGENTHOST_AEC_COMPARE: %q is not name=command", item)
		}
		for _, sc := range scenes() {
			b.Run(name+"/"+sc.name, func(b *testing.B) {
				s := sc.room.Render(far, nil)
				dt := sc.room.Render(far, doubleTalk(far, near))
				var erle, corr float64
				for b.Loop() {
					erle = echoroom.ERLE(s.Mic, external(b, cmd, dir, farPath, s.Mic), settle)
					corr, _ = echoroom.Correlation(external(b, cmd, dir, farPath, dt.Mic), dt.Near, nearStart, nearStart+len(near), rate/50)
				}
				b.ReportMetric(erle, "dB-ERLE")
				b.ReportMetric(corr, "near-corr")
			})
		}
	}
}

func external(b *testing.B, cmd, dir, far string, mic []int16) []int16 {
	in, out := filepath.Join(dir, "mic.raw"), filepath.Join(dir, "out.raw")
	if err := audiotest.WriteRaw(in, mic); err != nil {
		b.Fatal(err)
	}
	c := exec.Command("sh", "-c", cmd+` "$@"`, "sh", far, in, out)
	if msg, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd, err, msg)
	}
	x, err := audiotest.ReadRaw(out)
	if err != nil {
		b.Fatal(err)
	}
	return x
}
