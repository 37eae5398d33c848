//go:build cgo

package opus

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio/audiotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// roundTrip encodes pcm in 60 ms frames (zero-padding the last) and decodes
// every packet, going through the wire framing on the way.
func roundTrip(t testing.TB, pcm []int16, o EncoderOptions) (out []int16, bytesOut int) {
	enc, err := NewEncoder(o)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder(DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := enc.FrameSamples()
	frame := make([]int16, n)
	for i := 0; i < len(pcm); i += n {
		clear(frame)
		copy(frame, pcm[i:min(len(pcm), i+n)])
		payload, err := enc.AppendEncodeFramed(nil, frame, BigEndian)
		if err != nil {
			t.Fatal(err)
		}
		bytesOut += len(payload)
		if out, err = dec.AppendDecodePayload(out, payload); err != nil {
			t.Fatal(err)
		}
	}
	return out, bytesOut
}

func TestRoundTripSpeech(t *testing.T) {
	clip := audiotest.Speech(t, "Opus keeps speech intelligible at a low bit rate.")
	out, n := roundTrip(t, clip.Samples, EncoderOptions{})
	if len(out) < len(clip.Samples) {
		t.Fatalf("decoded %d samples, want at least %d", len(out), len(clip.Samples))
	}
	secs := float64(len(clip.Samples)) / 16000
	// Threshold 0.9: Opus is a perceptual codec, so the waveform changes;
	// at its default bitrate speech still correlates well above 0.9 once
	// the codec delay (a few ms) is allowed for.
	c, lag := audiotest.Correlate(clip.Samples, out, 480)
	t.Logf("%.2f s of speech: %d bytes (%.1f kbit/s), correlation %.4f at lag %d", secs, n, float64(n)*8/secs/1000, c, lag)
	if c < 0.9 {
		t.Errorf("correlation %.4f (lag %d), want >= 0.9", c, lag)
	}
}

func TestToneSurvives(t *testing.T) {
	tone := audiotest.Tone(440, 16000, time.Second)
	out, _ := roundTrip(t, tone, EncoderOptions{Bitrate: 32000, Application: Audio})
	mid := out[1600 : len(out)-1600]
	if f := audiotest.PeakFrequency(mid, 16000, 400, 480, 1); f != 440 {
		t.Errorf("440 Hz came back at %v Hz", f)
	}
}

func TestCodecErrors(t *testing.T) {
	if _, err := NewEncoder(EncoderOptions{Frame: 30 * time.Millisecond}); err == nil {
		t.Error("30 ms frames accepted")
	}
	if _, err := NewEncoder(EncoderOptions{Rate: 44100}); err == nil {
		t.Error("44.1 kHz accepted")
	}
	enc, err := NewEncoder(EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if enc.FrameSamples() != 960 {
		t.Errorf("frame of %d samples, want 960 (60 ms at 16 kHz)", enc.FrameSamples())
	}
	if _, err := enc.Encode(make([]int16, 959)); err == nil {
		t.Error("short frame accepted")
	}
	dec, err := NewDecoder(DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Decode(nil); err == nil {
		t.Error("empty packet decoded")
	}
	if _, err := dec.AppendDecodePayload(nil, []byte{0, 9, 1}); err == nil {
		t.Error("truncated payload decoded")
	}
	plc, err := dec.AppendLost(nil, 60*time.Millisecond)
	if err != nil || len(plc) != 960 {
		t.Errorf("concealment: %d samples, %v", len(plc), err)
	}
}

// BenchmarkEncodeDecodeSpeech measures Opus encode + decode of one minute
// of 16 kHz speech in 60 ms frames.
func BenchmarkEncodeDecodeSpeech(b *testing.B) {
	for _, complexity := range []int{0, SpeechComplexity} {
		b.Run(fmt.Sprintf("complexity=%d", complexity), func(b *testing.B) { benchSpeech(b, complexity) })
	}
}

func benchSpeech(b *testing.B, complexity int) {
	clip := audiotest.Speech(b, "Opus keeps speech intelligible at a low bit rate.")
	enc, err := NewEncoder(EncoderOptions{Complexity: complexity})
	if err != nil {
		b.Fatal(err)
	}
	dec, err := NewDecoder(DecoderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	const frames = 1000 // 1000 × 60 ms = 1 minute
	n := enc.FrameSamples()
	src := clip.Samples[:len(clip.Samples)/n*n]
	var pkt []byte
	var pcm []int16
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < frames; i++ {
			off := (i * n) % len(src)
			if pkt, err = enc.AppendEncode(pkt[:0], src[off:off+n]); err != nil {
				b.Fatal(err)
			}
			if pcm, err = dec.AppendDecode(pcm[:0], pkt); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/60e9*100, "cpu-%-of-core")
}
