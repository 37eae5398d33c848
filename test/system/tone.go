package system

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// toneStats describe 16-bit mono audio: how long it was loud (20 ms windows
// with an RMS above a tenth of the peak's), its peak, and its pitch (the
// strongest frequency of the loud windows, which a glitch does not move).
type toneStats struct {
	total, loud time.Duration
	quietAfter  time.Duration // after the last loud window
	peak        int
	hz          float64
}

func (s toneStats) String() string {
	return fmt.Sprintf("%s of audio, loud for %s, peak %d, %.0f Hz", s.total, s.loud, s.peak, s.hz)
}

func analyse(pcm []byte, rate int) toneStats {
	n := len(pcm) / 2
	s := make([]int, n)
	peak := 0
	for i := range n {
		s[i] = int(int16(binary.LittleEndian.Uint16(pcm[2*i:])))
		peak = max(peak, abs(s[i]))
	}
	st := toneStats{total: time.Duration(n) * time.Second / time.Duration(rate), peak: peak}
	win := rate / 50
	var loud []int
	lastLoud := 0
	for off := 0; off+win <= n; off += win {
		sum := 0.0
		for _, v := range s[off : off+win] {
			sum += float64(v * v)
		}
		if math.Sqrt(sum/float64(win)) < float64(peak)/10 || peak < 500 {
			continue
		}
		loud = append(loud, s[off:off+win]...)
		lastLoud = off + win
	}
	st.loud = time.Duration(len(loud)/win) * 20 * time.Millisecond
	st.quietAfter = time.Duration(n-lastLoud) * time.Second / time.Duration(rate)
	if len(loud) > 0 {
		// The windows' powers, summed: a jump between them (a period the
		// recording lost) does not move their peak, as it would the whole
		// sound's. Each is 100 Hz wide, so a 10 Hz grid finds the peak
		// and a finer one places it.
		windows := func(f float64) (p float64) {
			for off := 0; off < len(loud); off += win {
				p += power(loud[off:off+win], rate, f)
			}
			return p
		}
		st.hz = strongest(50, 4000, 10, windows)
		st.hz = strongest(st.hz-10, st.hz+10, 0.25, windows)
	}
	return st
}

// strongest is the frequency from lo to hi, in steps of step Hz, where power
// is the most.
func strongest(lo, hi, step float64, power func(f float64) float64) float64 {
	best, most := lo, -1.0
	for f := lo; f <= hi; f += step {
		if p := power(f); p > most {
			best, most = f, p
		}
	}
	return best
}

// power is the power of s at f Hz (Goertzel's algorithm).
func power(s []int, rate int, f float64) float64 {
	c := 2 * math.Cos(2*math.Pi*f/float64(rate))
	var s1, s2 float64
	for _, v := range s {
		s1, s2 = float64(v)+c*s1-s2, s1
	}
	return s1*s1 + s2*s2 - c*s1*s2
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// wavData returns the samples of a WAV file's data chunk.
func wavData(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, fmt.Errorf("not a WAV file (%d bytes)", len(b))
	}
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:]))
		off += 8
		if id == "data" {
			if size == 0 || off+size > len(b) { // still being written
				size = len(b) - off
			}
			return b[off : off+size&^1], nil
		}
		off += size + size%2
	}
	return nil, fmt.Errorf("no data chunk")
}

// toneWAV is d of a sine at hz, 16 kHz mono s16 at amplitude amp, with 200 ms of silence either side.
func toneWAV(hz float64, d time.Duration, amp float64) []byte {
	const rate = 16000
	pad := rate / 5
	n := int(d.Seconds() * rate)
	pcm := make([]byte, 2*(n+2*pad))
	for i := range n {
		v := int16(amp * math.Sin(2*math.Pi*hz*float64(i)/rate))
		binary.LittleEndian.PutUint16(pcm[2*(pad+i):], uint16(v))
	}
	var w bytes.Buffer
	w.WriteString("RIFF")
	binary.Write(&w, binary.LittleEndian, uint32(36+len(pcm)))
	w.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(2 * rate), uint16(2), uint16(16)} {
		binary.Write(&w, binary.LittleEndian, v) // fmt: PCM, mono, 16 kHz, 16 bits
	}
	w.WriteString("data")
	binary.Write(&w, binary.LittleEndian, uint32(len(pcm)))
	w.Write(pcm)
	return w.Bytes()
}
