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

// TestSettingsOutOfRangeFallBackToTheDefaults: a mixer given settings out
// of range (a positive duck_db, nine channels, an unknown mode) logs them
// and works with the defaults, the others kept, instead of failing or
// leaving the rest unset.
func TestSettingsOutOfRangeFallBackToTheDefaults(t *testing.T) {
	for _, o := range []Options{{DuckDB: 5, Rate: 48000}, {Channels: 9, Rate: 48000}, {MediaWhileActive: "stop", Rate: 48000}} {
		m := New(NewSlot(48000), o)
		got := m.Options()
		if got.Rate != 48000 || got.DuckDB != -20 || got.MediaWhileActive != Duck || got.Channels < 1 || got.Channels > 8 ||
			got.Frame != 20*time.Millisecond || got.Ramp != 20*time.Millisecond || got.MaxStreams != 16 || got.Logger == nil {
			t.Errorf("%+v: in use %+v", o, got)
		}
		if s, err := m.Open("reply", Voice, audio.Format{Rate: 16000, Channels: 1}); err != nil {
			t.Errorf("%+v: Open: %v", o, err)
		} else {
			s.Stop()
		}
	}
}
