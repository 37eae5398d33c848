package capture

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// A device with a 100 ms buffer, simulated on a fake clock: the first
// writes of a run return at once (the buffer fills), later ones when there
// is room. The reference must place every sample at the time it is heard,
// whatever the burst made the first bounds say.
func TestReferenceAlignsARun(t *testing.T) {
	const lat = 100 * time.Millisecond
	r := NewReference(rate)
	t0 := time.Now()
	heardAt := t0 // the device plays from the first write on
	queued := time.Duration(0)
	now := t0
	var played []int16
	for w := range 20 {
		p := make([]int16, 960) // 60 ms
		for i := range p {
			p[i] = int16(w*960 + i + 1)
		}
		played = append(played, p...)
		queued += 60 * time.Millisecond
		if over := queued - lat; over > 0 { // the write waits for room
			now = now.Add(over)
			queued = lat
		}
		r.played(p, lat, now)
	}
	// What played from 300 ms after the start is sample 4800 on.
	got := make([]int16, 160)
	r.Read(got, heardAt.Add(300*time.Millisecond))
	want := played[4800 : 4800+160]
	if d := offset(got, want); d != 0 {
		t.Fatalf("the reference is off by %d samples (got %v…, want %v…)", d, got[:3], want[:3])
	}
	// Before the run and after what was written: silence.
	r.Read(got, t0.Add(-time.Second))
	if slices.ContainsFunc(got, func(v int16) bool { return v != 0 }) {
		t.Fatal("sound before anything played")
	}
	r.Read(got, heardAt.Add(time.Duration(len(played)+1600)*time.Second/rate))
	if slices.ContainsFunc(got, func(v int16) bool { return v != 0 }) {
		t.Fatal("sound after everything played")
	}
	if r.Breaks() != 0 {
		t.Fatalf("%d breaks in one fed run", r.Breaks())
	}
	// A write long after the speaker ran dry starts a new run: a break.
	r.played(make([]int16, 960), lat, now.Add(5*time.Second))
	if r.Breaks() != 1 {
		t.Fatalf("Breaks = %d after the speaker ran dry, want 1", r.Breaks())
	}
}

// offset is how far got lies from want, samples (the values count up).
func offset(got, want []int16) int { return int(got[0]) - int(want[0]) }

// fakeSink records writes and reports a latency (a fake: a device whose
// writes return at once).
type fakeSink struct {
	mu     sync.Mutex
	writes [][]int16
	closed bool
}

func (f *fakeSink) Write(p []int16) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, audio.ErrClosed
	}
	f.writes = append(f.writes, append([]int16(nil), p...))
	return len(p), nil
}
func (f *fakeSink) Close() error           { f.mu.Lock(); f.closed = true; f.mu.Unlock(); return nil }
func (f *fakeSink) Latency() time.Duration { return 50 * time.Millisecond }

func TestTapSinkFeedsSilenceWhileIdle(t *testing.T) {
	dev := &fakeSink{}
	ref := NewReference(rate)
	sink := TapSink(dev, ref, rate, 20*time.Millisecond)
	if l := LatencyOf(sink); l != 50*time.Millisecond {
		t.Fatalf("the tap reports %v, want the device's 50ms", l)
	}
	sink.Write([]int16{1, 2, 3})
	deadline := time.Now().Add(10 * time.Second)
	for {
		dev.mu.Lock()
		n := len(dev.writes)
		dev.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no silence was written while idle")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if !dev.closed || !slices.Equal(dev.writes[0], []int16{1, 2, 3}) || len(dev.writes[1]) != 320 || slices.ContainsFunc(dev.writes[1], func(v int16) bool { return v != 0 }) {
		t.Fatalf("writes: first %v, then %d samples; closed %v", dev.writes[0], len(dev.writes[1]), dev.closed)
	}
}
