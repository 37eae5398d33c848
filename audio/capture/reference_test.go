package capture

import (
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
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

// clockedSink is a speaker that plays a write as it takes it, at rate
// frames of ch channels a second (a fake clocked by time.Sleep, for the
// bubble's virtual time), with no buffer.
type clockedSink struct {
	rate, ch int
}

func (c clockedSink) Write(p []int16) (int, error) {
	time.Sleep(time.Duration(len(p)/c.ch) * time.Second / time.Duration(c.rate))
	return len(p), nil
}
func (clockedSink) Close() error { return nil }

// TestATapOnAStereoSpeakerKeepsTheReferenceMonoAtItsRate: a speaker at
// 48 kHz stereo is tapped into a 16 kHz mono reference: what it played
// (0.4 of a 500 Hz tone left, 0.2 of it right) is in the reference as the
// channels' average, 0.3 of the tone, at the time it was heard to a
// fraction of a sample (the resampler's delay is accounted for).
func TestATapOnAStereoSpeakerKeepsTheReferenceMonoAtItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ref := NewReference(rate)
		sink, err := TapSinkFormat(clockedSink{48000, 2}, ref, audio.Format{Rate: 48000, Channels: 2}, 0)
		if err != nil {
			t.Fatal(err)
		}
		wave := func(r int, at int, amp float64) int16 {
			return int16(math.Round(amp * math.MaxInt16 * math.Sin(2*math.Pi*500*float64(at)/float64(r))))
		}
		t0 := time.Now()
		for w := range 50 { // 20 ms a write, 1 s
			p := make([]int16, 2*960)
			for i := range 960 {
				p[2*i], p[2*i+1] = wave(48000, w*960+i, 0.4), wave(48000, w*960+i, 0.2)
			}
			if _, err := sink.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]int16, rate/2)
		ref.Read(got, t0.Add(250*time.Millisecond))
		worst := 0.0
		for i, v := range got {
			worst = max(worst, math.Abs(float64(v)-float64(wave(rate, rate/4+i, 0.3))))
		}
		if worst > 0.01*0.3*math.MaxInt16 {
			t.Fatalf("the reference is %.0f off the channels' average (of %.0f) at its place on the timeline", worst, 0.3*math.MaxInt16)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// bufferedSink is clockedSink with a buffer that holds lat of sound when a
// write returns (a fake device clocked by time.Sleep, for the bubble).
type bufferedSink struct {
	clockedSink
	lat time.Duration
}

func (b bufferedSink) Latency() time.Duration { return b.lat }

// TestATapOnAStereoSpeakerFedWithoutAGapKeepsOneRun: a 48 kHz stereo
// speaker whose buffer holds 30 ms, written 20 ms at a time without a gap,
// is one run in the 16 kHz reference, as a 16 kHz mono one is: the
// resampler's output comes in bursts (a write may give none), and what it
// still holds was played too, so a write that gives none is not the
// speaker running dry. A new run would place the reference by one write's
// bound (a late write moves it) and the canceller would learn it again.
// After 100 ms with nothing written, it is a new run.
func TestATapOnAStereoSpeakerFedWithoutAGapKeepsOneRun(t *testing.T) {
	for _, f := range []audio.Format{{Rate: rate, Channels: 1}, {Rate: 48000, Channels: 2}} {
		synctest.Test(t, func(t *testing.T) {
			ref := NewReference(rate)
			sink, err := TapSinkFormat(bufferedSink{clockedSink{f.Rate, f.Channels}, 30 * time.Millisecond}, ref, f, 0)
			if err != nil {
				t.Fatal(err)
			}
			p := make([]int16, f.Rate/50*f.Channels)
			for i := range p {
				p[i] = int16(1000 + i%100)
			}
			for range 100 { // 2 s
				if _, err := sink.Write(p); err != nil {
					t.Fatal(err)
				}
			}
			if b := ref.Breaks(); b != 0 {
				t.Errorf("%v: %d breaks in 2 s of steady playback, want 0", f, b)
			}
			time.Sleep(100 * time.Millisecond) // the speaker runs dry
			for range 5 {
				sink.Write(p)
			}
			if b := ref.Breaks(); b != 1 {
				t.Errorf("%v: %d breaks after the speaker ran dry, want 1", f, b)
			}
			sink.Close()
		})
	}
}

// TestATapKeepsWhatItsResamplerHeldWhereItWasPlayedAfterTheSpeakerRanDry:
// a 48 kHz stereo speaker (30 ms buffer) plays 0.5 s of a level, runs dry
// for 200 ms, then plays half the level. The end of the level, which the tap's
// resampler still held when the speaker ran dry, is in the reference where
// it was heard (else its echo is not cancelled), and the reference is
// silent in the gap (else the canceller takes off the echo of a sound that
// is not playing).
func TestATapKeepsWhatItsResamplerHeldWhereItWasPlayedAfterTheSpeakerRanDry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ref := NewReference(rate)
		sink, err := TapSinkFormat(bufferedSink{clockedSink{48000, 2}, 30 * time.Millisecond}, ref, audio.Format{Rate: 48000, Channels: 2}, 0)
		if err != nil {
			t.Fatal(err)
		}
		level, half := make([]int16, 2*960), make([]int16, 2*960)
		for i := range level {
			level[i], half[i] = 8000, 4000
		}
		t0 := time.Now()
		for range 25 { // 0.5 s, heard until t0+530ms
			sink.Write(level)
		}
		time.Sleep(200 * time.Millisecond)
		for range 25 { // heard from t0+730ms
			sink.Write(half)
		}
		end := make([]int16, rate/50) // the level's last 20 ms
		ref.Read(end, t0.Add(510*time.Millisecond))
		gap := make([]int16, rate/40) // the 25 ms before the next sound
		ref.Read(gap, t0.Add(705*time.Millisecond))
		next := make([]int16, rate/10)
		ref.Read(next, t0.Add(900*time.Millisecond))
		mean := func(p []int16) float64 {
			var sum float64
			for _, v := range p {
				sum += float64(v)
			}
			return sum / float64(len(p))
		}
		if m := mean(end); m < 7000 {
			t.Errorf("the level's last 20 ms average %.0f in the reference, want 8000", m)
		}
		if m := mean(next); m < 3950 || m > 4050 {
			t.Errorf("the next sound averages %.0f in the reference, want 4000", m)
		}
		if b := ref.Breaks(); b != 1 {
			t.Errorf("%d breaks, want 1: the speaker ran dry once", b)
		}
		for i, v := range gap {
			if v > 100 || v < -100 {
				t.Fatalf("the reference has %d at %v into the gap, where nothing played", v, 175*time.Millisecond+time.Duration(i)*time.Second/rate)
			}
		}
		sink.Close()
	})
}

// convertingDevice is a 16 kHz mono speaker whose buffer holds 30 ms,
// clocked by time.Sleep, that keeps each write and when it is heard.
type convertingDevice struct {
	writes [][]int16
	heard  []time.Time // when each write's last sample is heard
}

func (d *convertingDevice) Write(p []int16) (int, error) {
	time.Sleep(time.Duration(len(p)) * time.Second / rate)
	d.writes = append(d.writes, append([]int16(nil), p...))
	d.heard = append(d.heard, time.Now().Add(30*time.Millisecond))
	return len(p), nil
}
func (d *convertingDevice) Close() error           { return nil }
func (d *convertingDevice) Latency() time.Duration { return 30 * time.Millisecond }

// TestATapOnAConvertingSpeakerThatRanDryKeepsTheReferenceOnWhatItPlays: a
// speaker that converts 48 kHz stereo to 16 kHz mono itself (the echo
// room's; a sound card opened at another rate) holds the end of a sound in
// its own filter until the next write, and plays it then, after the gap:
// the reference, kept by a tap with the same filter, has it there too, so
// it is what the speaker played, sample for sample, before and after the
// speaker ran dry.
func TestATapOnAConvertingSpeakerThatRanDryKeepsTheReferenceOnWhatItPlays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ref := NewReference(rate)
		dev := &convertingDevice{}
		f := audio.Format{Rate: 48000, Channels: 2}
		conv, err := audio.ConvertSink(dev, f, audio.Format{Rate: rate, Channels: 1})
		if err != nil {
			t.Fatal(err)
		}
		sink, err := TapSinkFormat(conv, ref, f, 0)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]int16, 2*960)
		for w := range 50 {
			for i := range 960 {
				v := int16(math.Round(8000 * math.Sin(2*math.Pi*300*float64(w*960+i)/48000)))
				p[2*i], p[2*i+1] = v, v
			}
			if w == 25 {
				time.Sleep(200 * time.Millisecond) // the speaker runs dry
			}
			sink.Write(p)
		}
		for w := 10; w < len(dev.writes); w++ {
			want := dev.writes[w]
			got := make([]int16, len(want))
			ref.Read(got, dev.heard[w].Add(-time.Duration(len(want))*time.Second/rate))
			for i := range want {
				if d := int(got[i]) - int(want[i]); d > 200 || d < -200 {
					t.Fatalf("write %d of %d to the speaker, sample %d of %d: the reference has %d, the speaker played %d", w, len(dev.writes), i, len(want), got[i], want[i])
				}
			}
		}
		sink.Close()
	})
}
