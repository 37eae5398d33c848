package system

import (
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
