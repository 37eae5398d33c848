package mixer

import (
	"time"

	"github.com/agenthost/agenthost/audio"
)

// Slot is an output the device is plugged into and out of (it is opened
// late, lost, reopened on a reload) while the mixer runs on. With no device
// in it, what is written is dropped at the pace it would have played.
type Slot struct {
	rate int           // samples (not frames) a second
	turn chan struct{} // held over a write and a Set: a channel, which testing/synctest sees as blocked
	sink audio.Sink
	next time.Time // no device: when the last write would have played out
}

// NewSlot returns an empty slot for mono samples at rate.
func NewSlot(rate int) *Slot { return &Slot{rate: max(rate, 1), turn: make(chan struct{}, 1)} }

// NewSlotFormat returns an empty slot for interleaved frames of f.
func NewSlotFormat(f audio.Format) *Slot { return NewSlot(f.Rate * max(f.Channels, 1)) }

// Set plugs sink in (nil: unplugs) once the write under way is done, and
// returns what was plugged in before.
func (s *Slot) Set(sink audio.Sink) audio.Sink {
	s.turn <- struct{}{}
	prev := s.sink
	s.sink = sink
	<-s.turn
	return prev
}

// Plugged reports whether a device is in the slot.
func (s *Slot) Plugged() bool {
	s.turn <- struct{}{}
	defer func() { <-s.turn }()
	return s.sink != nil
}

// Write writes p to the device, or drops it in real time when there is none.
func (s *Slot) Write(p []int16) (int, error) {
	s.turn <- struct{}{}
	defer func() { <-s.turn }()
	if s.sink != nil {
		return s.sink.Write(p)
	}
	now := time.Now()
	if s.next.Before(now) {
		s.next = now
	}
	s.next = s.next.Add(time.Duration(len(p)) * time.Second / time.Duration(s.rate))
	time.Sleep(time.Until(s.next))
	return len(p), nil
}

// Close unplugs and closes the device in the slot.
func (s *Slot) Close() error {
	if prev := s.Set(nil); prev != nil {
		return prev.Close()
	}
	return nil
}
