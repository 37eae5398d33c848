// Package audiotest holds helpers for tests that involve audio: synthetic
// tones, a Goertzel tone detector, correlation, spoken test clips made with
// espeak-ng and sox, a headless ALSA configuration (the `file` plugin over a
// `null` slave, so PortAudio works without a sound card), and a way to run a
// test in a fresh child process so that each PortAudio test gets its own
// ALSA_CONFIG_PATH.
//
// It is for tests only; production code must not import it.
package audiotest

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// Tone returns dur of a sine at freq Hz sampled at rate, with amplitude 0.5
// of full scale (-6 dBFS).
func Tone(freq float64, rate int, dur time.Duration) []int16 {
	return ToneAmp(freq, rate, dur, 0.5)
}

// ToneAmp is Tone with an amplitude given as a fraction of full scale (0..1).
func ToneAmp(freq float64, rate int, dur time.Duration, amp float64) []int16 {
	n := int(int64(rate) * int64(dur) / int64(time.Second))
	out := make([]int16, n)
	for i := range out {
		v := amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
		out[i] = int16(math.Round(v * 32767))
	}
	return out
}

// Silence returns dur of zeros at rate.
func Silence(rate int, dur time.Duration) []int16 {
	return make([]int16, int(int64(rate)*int64(dur)/int64(time.Second)))
}

// Interleave builds interleaved frames from equally long channels.
func Interleave(channels ...[]int16) []int16 {
	if len(channels) == 0 {
		return nil
	}
	n := len(channels[0])
	for _, c := range channels {
		n = min(n, len(c))
	}
	out := make([]int16, 0, n*len(channels))
	for i := 0; i < n; i++ {
		for _, c := range channels {
			out = append(out, c[i])
		}
	}
	return out
}

// Goertzel estimates the amplitude (as a fraction of full scale, so a Tone
// gives about 0.5) of the component at freq Hz in samples taken at rate.
// A Hann window keeps leakage from nearby strong components low.
func Goertzel(samples []int16, freq float64, rate int) float64 {
	xw, wsum := hann(samples)
	return goertzel(xw, wsum, freq, rate)
}

// hann returns the windowed samples (scaled to ±1) and the window's sum.
func hann(samples []int16) ([]float64, float64) {
	n := len(samples)
	xw := make([]float64, n)
	var wsum float64
	for i, x := range samples {
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
		wsum += w
		xw[i] = float64(x) / 32768 * w
	}
	return xw, wsum
}

func goertzel(xw []float64, wsum, freq float64, rate int) float64 {
	if len(xw) == 0 || wsum == 0 {
		return 0
	}
	w := 2 * math.Pi * freq / float64(rate)
	coeff := 2 * math.Cos(w)
	var s1, s2 float64
	for _, x := range xw {
		s1, s2 = x+coeff*s1-s2, s1
	}
	re := s1 - s2*math.Cos(w)
	im := s2 * math.Sin(w)
	return 2 * math.Hypot(re, im) / wsum
}

// PeakFrequency scans [lo, hi] in steps of step Hz with Goertzel and returns
// the frequency with the largest amplitude.
func PeakFrequency(samples []int16, rate int, lo, hi, step float64) float64 {
	xw, wsum := hann(samples)
	best, bestAmp := lo, -1.0
	for f := lo; f <= hi; f += step {
		if a := goertzel(xw, wsum, f, rate); a > bestAmp {
			best, bestAmp = f, a
		}
	}
	return best
}

// RMS is the root mean square of samples as a fraction of full scale.
func RMS(samples []int16) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum float64
	for _, x := range samples {
		v := float64(x) / 32768
		sum += v * v
	}
	return math.Sqrt(sum / float64(len(samples)))
}

// DB converts an amplitude ratio to decibels.
func DB(ratio float64) float64 { return 20 * math.Log10(ratio) }

// Correlate returns the largest normalized cross-correlation of a and b over
// lags in [-maxLag, maxLag] (b shifted against a), and that lag. 1 means
// identical up to gain.
func Correlate(a, b []int16, maxLag int) (best float64, lag int) {
	best = math.Inf(-1)
	for l := -maxLag; l <= maxLag; l++ {
		var sab, saa, sbb float64
		for i := range a {
			j := i + l
			if j < 0 || j >= len(b) {
				continue
			}
			x, y := float64(a[i]), float64(b[j])
			sab += x * y
			saa += x * x
			sbb += y * y
		}
		if saa == 0 || sbb == 0 {
			continue
		}
		if c := sab / math.Sqrt(saa*sbb); c > best {
			best, lag = c, l
		}
	}
	return best, lag
}

// WriteRaw writes samples as raw signed 16-bit little-endian PCM.
func WriteRaw(path string, samples []int16) error {
	buf := make([]byte, 2*len(samples))
	for i, s := range samples {
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(s))
	}
	return os.WriteFile(path, buf, 0o644)
}

// ReadRaw reads a raw signed 16-bit little-endian PCM file.
func ReadRaw(path string) ([]int16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return BytesToSamples(b), nil
}

// BytesToSamples decodes s16le bytes (an odd trailing byte is dropped).
func BytesToSamples(b []byte) []int16 {
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// SamplesToBytes encodes samples as s16le bytes.
func SamplesToBytes(s []int16) []byte {
	out := make([]byte, 2*len(s))
	for i, x := range s {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(x))
	}
	return out
}

// ReadWAV reads a 16-bit PCM WAV file and returns its interleaved samples,
// rate and channel count. It is a small reader for tests, not a full parser.
func ReadWAV(path string) (samples []int16, rate, channels int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	var hdr [12]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return nil, 0, 0, fmt.Errorf("%s: not a RIFF/WAVE file", path)
	}
	for {
		var ch [8]byte
		if _, err := io.ReadFull(f, ch[:]); err != nil {
			return nil, 0, 0, fmt.Errorf("%s: no data chunk: %w", path, err)
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:]))
		switch string(ch[0:4]) {
		case "fmt ":
			b := make([]byte, size)
			if _, err := io.ReadFull(f, b); err != nil {
				return nil, 0, 0, err
			}
			if bits := binary.LittleEndian.Uint16(b[14:]); bits != 16 {
				return nil, 0, 0, fmt.Errorf("%s: %d bits per sample, want 16", path, bits)
			}
			channels = int(binary.LittleEndian.Uint16(b[2:]))
			rate = int(binary.LittleEndian.Uint32(b[4:]))
		case "data":
			b := make([]byte, size)
			n, err := io.ReadFull(f, b)
			if err != nil && err != io.ErrUnexpectedEOF {
				return nil, 0, 0, err
			}
			return BytesToSamples(b[:n]), rate, channels, nil
		default:
			if _, err := f.Seek(size+size%2, io.SeekCurrent); err != nil {
				return nil, 0, 0, err
			}
		}
	}
}
