package sdk

import (
	"testing"
	"time"
)

// TestSentCountsDaysOfRadioWithoutOverflowing: Sent multiplied the frames
// by a second's nanoseconds before dividing by the rate, which overflows
// int64 after about 53 hours at 48 kHz.
func TestSentCountsDaysOfRadioWithoutOverflowing(t *testing.T) {
	const rate, frame = 48000, 4 // 16-bit stereo
	for _, want := range []time.Duration{
		500 * time.Millisecond,
		72*time.Hour + 500*time.Millisecond,
		365 * 24 * time.Hour,
	} {
		p := &Playback{frame: frame, rate: rate, sent: int64(want/time.Millisecond) * rate / 1000 * frame}
		if got := p.Sent(); got != want {
			t.Errorf("Sent after %v of 48 kHz stereo = %v", want, got)
		}
	}
}
