package audio

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
)

// The benchmarks report ns/op for one minute of audio and cpu-%-of-core:
// processing time / audio duration × 100 (the devices are headless ALSA
// files, which deliver as fast as the CPU allows, so wall time is
// processing time).

func reportCPU(b *testing.B, audio time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(audio.Nanoseconds())*100, "cpu-%-of-core")
}

// benchCapture reads one minute of 16 kHz mono from a PortAudio device
// opened at dev. It runs in the benchmark's own process: PortAudio is
// initialized here with this ALSA_CONFIG_PATH and terminated when the
// source closes (tests that use PortAudio run in child processes).
func benchCapture(b *testing.B, dev Format) {
	dir := b.TempDir()
	tone := audiotest.Tone(440, dev.Rate, time.Second)
	chans := make([][]int16, dev.Channels)
	for i := range chans {
		chans[i] = tone
	}
	raw := filepath.Join(dir, "mic.s16")
	// ALSA repeats the last chunk after the end of the file, so a short
	// file is enough for a minute of capture.
	if err := audiotest.WriteRaw(raw, audiotest.Interleave(chans...)); err != nil {
		b.Fatal(err)
	}
	conf, err := audiotest.WriteALSAConfig(dir, audiotest.ALSADevice{Name: "mic", Capture: raw})
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("ALSA_CONFIG_PATH", conf)
	src, err := OpenPortAudioSource(b.Context(), Options{Device: "mic", DeviceRate: dev.Rate, DeviceChannels: dev.Channels, FailFast: true})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	buf := make([]int16, 960) // 60 ms
	b.ResetTimer()
	for b.Loop() {
		for range 1000 { // 1000 × 60 ms = 1 minute
			if _, err := ReadFull(src, buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, time.Minute)
}

// BenchmarkCapturePortAudio48kStereo is the PCM capture path of a typical
// USB microphone: PortAudio read at 48 kHz stereo, downmix, libsoxr to
// 16 kHz mono.
func BenchmarkCapturePortAudio48kStereo(b *testing.B) { benchCapture(b, Format{48000, 2}) }

// BenchmarkCapturePortAudio16kMono is the same path without conversion.
func BenchmarkCapturePortAudio16kMono(b *testing.B) { benchCapture(b, Format{16000, 1}) }

// BenchmarkConvert48kStereo is the conversion step alone (no device).
func BenchmarkConvert48kStereo(b *testing.B) {
	tone := audiotest.Tone(440, 48000, time.Second)
	in := audiotest.Interleave(tone, tone)
	c, err := newToWire(Format{48000, 2}, 16000, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	out := make([]int16, 0, 1024)
	const chunk = 2 * 960 // 20 ms of 48 kHz stereo
	b.ResetTimer()
	for b.Loop() {
		for range 60 {
			for i := 0; i < len(in); i += chunk {
				out, _ = c.append(out[:0], in[i:i+chunk])
			}
		}
	}
	reportCPU(b, time.Minute)
}
