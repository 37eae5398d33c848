package mixer

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// TestPlayedAndPositionHoldAfterAWeekOfRadio: the counters in samples are
// turned into durations without overflowing: a week of media at 16 kHz is
// a week (a week of mixing is set, not played).
func TestPlayedAndPositionHoldAfterAWeekOfRadio(t *testing.T) {
	const week = 7 * 24 * time.Hour
	m := New(NewSlot(16000), Options{Rate: 16000})
	s, err := m.Open("radio", Media, audio.Format{Rate: 16000, Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	m.mu.Lock()
	m.played[Media] = 16000 * int64(week/time.Second)
	s.pos = m.played[Media] + 8000
	m.mu.Unlock()
	if d := m.Stats().Played["media"]; d != week {
		t.Errorf("Played[media] after a week = %v, want %v", d, week)
	}
	if st := m.Status(); len(st) != 1 || st[0].Position != week+500*time.Millisecond {
		t.Errorf("the radio's position after a week and half a second: %+v", st)
	}
}
