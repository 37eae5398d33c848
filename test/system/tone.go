package system

import (
	"fmt"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
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
	s := audiotest.BytesToSamples(pcm)
	peak := 0
	for _, v := range s {
		peak = max(peak, abs(int(v)))
	}
	st := toneStats{total: time.Duration(len(s)) * time.Second / time.Duration(rate), peak: peak}
	win := rate / 50
	var loud [][]int16
	lastLoud := 0
	for off := 0; off+win <= len(s); off += win {
		w := s[off : off+win]
		if audiotest.RMS(w)*32768 < float64(peak)/10 || peak < 500 {
			continue
		}
		loud = append(loud, w)
		lastLoud = off + win
	}
	st.loud = time.Duration(len(loud)) * 20 * time.Millisecond
	st.quietAfter = time.Duration(len(s)-lastLoud) * time.Second / time.Duration(rate)
	if len(loud) > 0 {
		// The windows' powers, summed: a jump between them (a period the
		// recording lost) does not move their peak, as it would the whole
		// sound's. Each is 200 Hz wide, so a 10 Hz grid finds the peak
		// and a finer one places it.
		power := func(f float64) (p float64) {
			for _, w := range loud {
				a := audiotest.Goertzel(w, f, rate)
				p += a * a
			}
			return p
		}
		st.hz = strongest(50, 4000, 10, power)
		st.hz = strongest(st.hz-10, st.hz+10, 0.25, power)
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

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
