package system

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// A recording made while the machine is saturated has glitches: where a
// period was late the sound jumps (the samples it lost are not there), and
// PipeWire's resampling rings at each jump. The tone's pitch is still the
// tone's (seen in TestDesktop under load: 300 Hz of music read as 399 Hz,
// its peak 8643 for 8192).
func TestAToneWithGlitchesKeepsItsPitch(t *testing.T) {
	for _, hz := range []float64{300, 437.3, 883.7} {
		toneWithGlitches(t, hz)
	}
}

func toneWithGlitches(t *testing.T, hz float64) {
	const rate, amp = 16000, 8192.0
	n := 2 * rate
	pcm := make([]byte, 2*n)
	lost := 0 // samples the recording lost so far
	for i := range n {
		if i%(rate*60/1000) == 0 {
			lost += i / (rate * 60 / 1000) * 37 % (rate / 100) // up to 10 ms lost every 60 ms
		}
		v := amp * math.Sin(2*math.Pi*hz*float64(i+lost)/rate)
		if k := i % (rate * 60 / 1000); k < rate*5/1000 { // 5 ms of ringing every 60 ms
			v = amp / 2 * math.Exp(-float64(k)/20) * math.Sin(2*math.Pi*7500*float64(k)/rate)
		}
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(v)))
	}
	st := analyse(pcm, rate)
	if math.Abs(st.hz-hz) > 1 {
		t.Errorf("a %.1f Hz tone with a jump and ringing every 60 ms reads as %.2f Hz", hz, st.hz)
	}
	if st.loud < 1900*time.Millisecond {
		t.Errorf("a 2 s tone with glitches was loud for %s", st.loud)
	}
}
