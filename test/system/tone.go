package system

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// toneStats describe 16-bit mono audio: how long it was loud (20 ms windows
// with an RMS above a tenth of the peak's), its peak, and its pitch (zero
// crossings in the loud windows).
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
	loudWin, crossings, loudSamples, lastLoud := 0, 0, 0, 0
	for off := 0; off+win <= n; off += win {
		sum := 0.0
		for _, v := range s[off : off+win] {
			sum += float64(v * v)
		}
		if math.Sqrt(sum/float64(win)) < float64(peak)/10 || peak < 500 {
			continue
		}
		loudWin++
		loudSamples += win
		lastLoud = off + win
		for i := off + 1; i < off+win; i++ {
			if (s[i-1] < 0) != (s[i] < 0) {
				crossings++
			}
		}
	}
	st.loud = time.Duration(loudWin) * 20 * time.Millisecond
	st.quietAfter = time.Duration(n-lastLoud) * time.Second / time.Duration(rate)
	if loudSamples > 0 {
		st.hz = float64(crossings) / 2 / (float64(loudSamples) / float64(rate))
	}
	return st
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
