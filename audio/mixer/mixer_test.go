package mixer_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/mixer"
)

const rate = 16000

// speaker records what the mixer plays and takes real (or, in a bubble,
// virtual) time to play it, as a device does.
type speaker struct {
	mu      sync.Mutex
	samples []int16
}

func (s *speaker) Write(p []int16) (int, error) {
	s.mu.Lock()
	s.samples = append(s.samples, p...)
	s.mu.Unlock()
	time.Sleep(time.Duration(len(p)) * time.Second / rate)
	return len(p), nil
}
func (s *speaker) Close() error { return nil }

func (s *speaker) played() []int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int16(nil), s.samples...)
}

// run starts m until the test ends.
func run(t *testing.T, m *mixer.Mixer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// play writes pcm to a new stream and closes it, in the background.
func play(t *testing.T, m *mixer.Mixer, name string, c mixer.Class, f audio.Format, pcm []int16) *mixer.Stream {
	t.Helper()
	s, err := m.Open(name, c, f)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if _, err := s.Write(pcm); err == nil {
			s.Close()
		}
	}()
	return s
}

func constant(v int16, d time.Duration) []int16 {
	p := make([]int16, int(d.Seconds()*rate))
	for i := range p {
		p[i] = v
	}
	return p
}

func rms(p []int16) float64 {
	var sum float64
	for _, v := range p {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(1, len(p))))
}

func maxStep(p []int16) int {
	var m int
	for i := 1; i < len(p); i++ {
		m = max(m, abs(int(p[i])-int(p[i-1])))
	}
	return m
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

var mono = audio.Format{Rate: rate, Channels: 1}

func TestStreamsAreSummedAndTheSumSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate, Buffer: time.Second})
		play(t, m, "a", mixer.Voice, mono, constant(20000, 200*time.Millisecond))
		play(t, m, "b", mixer.Earcon, mono, constant(20000, 100*time.Millisecond))
		play(t, m, "c", mixer.Earcon, mono, constant(-3000, 100*time.Millisecond))
		synctest.Wait() // all three written before the mix starts
		run(t, m)
		time.Sleep(time.Second)
		synctest.Wait()
		got := out.played()
		if len(got) != 200*rate/1000 {
			t.Fatalf("%d samples played, want 3200 (the longest stream)", len(got))
		}
		if got[0] != math.MaxInt16 || got[1599] != math.MaxInt16 || got[1600] != 20000 || got[3199] != 20000 {
			t.Fatalf("samples %d %d %d %d; want the sum saturated at 32767, then 20000", got[0], got[1599], got[1600], got[3199])
		}
	})
}

// TestDuckingRampsDownWithoutAClickAndBackUp: SetActive turns media down by
// DuckDB (measured by RMS) over the ramp, never by a step larger than the
// tone's own plus what the ramp adds, and brings it back.
func TestDuckingRampsDownWithoutAClickAndBackUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate, DuckDB: -20, Ramp: 30 * time.Millisecond})
		run(t, m)
		tone := audiotest.Tone(440, rate, 3*time.Second) // full scale
		play(t, m, "radio", mixer.Media, mono, tone)
		time.Sleep(time.Second)
		m.SetActive(true)
		if st := m.Status(); len(st) != 1 || !st[0].Ducked || st[0].Class != "media" {
			t.Fatalf("status while active: %+v", st)
		}
		time.Sleep(time.Second)
		m.SetActive(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := out.played()
		if len(got) != len(tone) {
			t.Fatalf("%d samples played of %d", len(got), len(tone))
		}
		loud, ducked, back := rms(got[rate/4:3*rate/4]), rms(got[rate+rate/4:rate+3*rate/4]), rms(got[2*rate+rate/4:])
		if db := 20 * math.Log10(ducked/loud); math.Abs(db+20) > 0.5 {
			t.Fatalf("ducked by %.2f dB, want -20", db)
		}
		if db := 20 * math.Log10(back/loud); math.Abs(db) > 0.1 {
			t.Fatalf("after the turn the media is at %.2f dB, want 0", db)
		}
		toneStep := maxStep(tone)
		rampStep := rampLimit
		if s := maxStep(got); s > toneStep+rampStep {
			t.Fatalf("largest step %d; the tone's own is %d and the ramp adds at most %d (a click)", s, toneStep, rampStep)
		}
		if st := m.Stats(); st.Ducks != 1 {
			t.Fatalf("%d ducking events, want 1", st.Ducks)
		}
	})
}

// TestWithoutARampDuckingWouldClick shows the click bound above can fail:
// a ramp of one sample steps the tone down at once.
func TestWithoutARampDuckingWouldClick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate, Ramp: time.Second / rate})
		run(t, m)
		tone := audiotest.Tone(440, rate, time.Second)
		play(t, m, "radio", mixer.Media, mono, tone)
		time.Sleep(503 * time.Millisecond)
		m.SetActive(true)
		time.Sleep(time.Second)
		synctest.Wait()
		if s, bound := maxStep(out.played()), maxStep(tone)+rampLimit; s <= bound {
			t.Fatalf("largest step %d within %d: the test cannot see a click", s, bound)
		}
	})
}

func TestPauseModeHoldsMediaWhileActiveAndResumesWhereItWas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate, MediaWhileActive: mixer.Pause, KeepFed: 20 * time.Millisecond})
		run(t, m)
		s := play(t, m, "radio", mixer.Media, mono, constant(1000, time.Second))
		time.Sleep(300 * time.Millisecond)
		m.SetActive(true)
		time.Sleep(100 * time.Millisecond)
		st := m.Status()
		pos := st[0].Position
		time.Sleep(time.Second)
		if st := m.Status(); !st[0].Paused || st[0].Position != pos {
			t.Fatalf("while active: %+v, position was %v", st, pos)
		}
		m.SetActive(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		var loud int
		for _, v := range out.played() {
			if v != 0 {
				loud++
			}
		}
		if loud < rate-rate/100 || loud > rate {
			t.Fatalf("%d samples of media played, want the whole second", loud)
		}
		_ = s
	})
}

func TestARingDucksEverythingElseAndAnAnnouncementDucksOnlyMedia(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate})
		run(t, m)
		play(t, m, "reply", mixer.Voice, mono, constant(1000, 3*time.Second))
		play(t, m, "radio", mixer.Media, mono, constant(100, 3*time.Second))
		time.Sleep(500 * time.Millisecond)
		play(t, m, "dinner", mixer.Announcement, mono, constant(10, 500*time.Millisecond))
		time.Sleep(time.Second)
		play(t, m, "timer", mixer.Ring, mono, constant(10000, 500*time.Millisecond))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := out.played()
		at := func(ms int) int16 { return got[ms*rate/1000] }
		if v := at(400); v != 1100 {
			t.Fatalf("before: %d, want 1100", v)
		}
		if v := at(800); v != 1000+10+10 {
			t.Fatalf("during the announcement: %d, want the voice whole, media at -20 dB (10) and the announcement (10)", v)
		}
		if v := at(1800); v != 100+10+10000 {
			t.Fatalf("during the ring: %d, want voice (100) and media (10) at -20 dB and the ring whole", v)
		}
		if v := at(2800); v != 1100 {
			t.Fatalf("after: %d", v)
		}
	})
}

func TestAStalledWriterDoesNotStallTheMix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate})
		run(t, m)
		stalled, err := m.Open("stalled", mixer.Voice, mono)
		if err != nil {
			t.Fatal(err)
		}
		stalled.Write(constant(7, 10*time.Millisecond)) // and then nothing
		play(t, m, "radio", mixer.Media, mono, constant(500, time.Second))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		var n int
		for _, v := range out.played() {
			if v == 500 || v == 507 {
				n++
			}
		}
		if n != rate {
			t.Fatalf("%d samples of the media played, want all %d", n, rate)
		}
		stalled.Stop()
		if _, err := stalled.Write([]int16{1}); !errors.Is(err, mixer.ErrClosed) {
			t.Fatalf("write after Stop: %v", err)
		}
	})
}

// TestWriteIsPacedByTheSpeaker: a stream's Write blocks while its buffer is
// full, so a writer with a minute of sound is held to the speaker's pace.
func TestWriteIsPacedByTheSpeaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mixer.New(&speaker{}, mixer.Options{Rate: rate, Buffer: 100 * time.Millisecond})
		run(t, m)
		s, err := m.Open("reply", mixer.Voice, mono)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := s.Write(constant(1, 2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 1800*time.Millisecond {
			t.Fatalf("2 s written in %v: the buffer is not bounded", d)
		}
		s.Close()
		if d := time.Since(start); d < 2*time.Second {
			t.Fatalf("Close returned %v after the start, before the sound played out", d)
		}
	})
}

func TestStopCloseAndTheMixersEndLeaveNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mixer.New(&speaker{}, mixer.Options{Rate: rate})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		a := play(t, m, "a", mixer.Voice, mono, constant(1, 10*time.Second))
		b := play(t, m, "b", mixer.Media, audio.Format{Rate: 44100, Channels: 2}, make([]int16, 2*44100*10))
		play(t, m, "c", mixer.Earcon, mono, constant(1, 100*time.Millisecond))
		time.Sleep(500 * time.Millisecond)
		a.Stop()
		b.Pause(true)
		time.Sleep(500 * time.Millisecond)
		if st := m.Status(); len(st) != 1 || st[0].Name != "b" || !st[0].Paused {
			t.Fatalf("status %+v", st)
		}
		cancel() // b's writer is blocked in Write: it must return
		<-done
		if _, err := m.Open("late", mixer.Media, mono); err == nil {
			t.Fatal("a stream opened on a mixer that has ended")
		}
		// synctest.Test fails if a goroutine of the bubble is left blocked.
	})
}

func TestOpenIsRefusedPastMaxStreamsAndForBadFormats(t *testing.T) {
	m := mixer.New(&speaker{}, mixer.Options{Rate: rate, MaxStreams: 2})
	for i := range 2 {
		if _, err := m.Open("s", mixer.Voice, mono); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	if _, err := m.Open("third", mixer.Voice, mono); err == nil {
		t.Fatal("a third stream opened with MaxStreams 2")
	}
	for _, f := range []audio.Format{{Rate: 0, Channels: 1}, {Rate: 16000, Channels: 0}, {Rate: 16000, Channels: 99}} {
		if _, err := mixer.New(&speaker{}, mixer.Options{}).Open("bad", mixer.Media, f); err == nil {
			t.Fatalf("format %v accepted", f)
		}
	}
	if _, err := mixer.New(&speaker{}, mixer.Options{}).Open("bad", mixer.Class(9), mono); err == nil {
		t.Fatal("class 9 accepted")
	}
}

// TestAStereoStreamAtAnotherRateIsConverted: 48 kHz stereo in, the same
// tone at the output's rate out.
func TestAStereoStreamAtAnotherRateIsConverted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate})
		run(t, m)
		tone := audiotest.Tone(1000, 48000, time.Second)
		stereo := make([]int16, 2*len(tone))
		for i, v := range tone {
			stereo[2*i], stereo[2*i+1] = v/2, v/2
		}
		play(t, m, "music", mixer.Media, audio.Format{Rate: 48000, Channels: 2}, stereo)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := out.played()
		if len(got) < rate*99/100 || len(got) > rate*101/100 {
			t.Fatalf("%d samples out for 1 s in", len(got))
		}
		if f := audiotest.PeakFrequency(got[rate/4:3*rate/4], rate, 200, 4000, 5); math.Abs(f-1000) > 10 {
			t.Fatalf("peak at %.0f Hz, want 1000", f)
		}
		if r := rms(got[rate/4 : 3*rate/4]); math.Abs(20*math.Log10(r/rms(tone)/0.5)) > 0.5 {
			t.Fatalf("level %.0f, want half the tone's (channels averaged)", r)
		}
	})
}

func TestClassesHaveNames(t *testing.T) {
	for _, c := range []mixer.Class{mixer.Ring, mixer.Voice, mixer.Earcon, mixer.Announcement, mixer.Media} {
		got, err := mixer.ParseClass(c.String())
		if err != nil || got != c {
			t.Fatalf("%v: %v %v", c, got, err)
		}
	}
	if _, err := mixer.ParseClass("music"); err == nil {
		t.Fatal("music parsed")
	}
}

// rampLimit is the most a 30 ms ramp moves a full-scale sample in one step.
const rampLimit = math.MaxInt16/(30*rate/1000) + 2

// TestKeepFedWritesSilenceInRealTimeWhileIdle: with KeepFed the device gets
// silence at the pace it plays while nothing plays (the echo canceller's
// reference goes on), whether it blocks as it plays or not; without, it
// gets nothing.
func TestKeepFedWritesSilenceInRealTimeWhileIdle(t *testing.T) {
	for _, keep := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			out := &speaker{}
			m := mixer.New(out, mixer.Options{Rate: rate, KeepFed: keep})
			run(t, m)
			play(t, m, "beep", mixer.Earcon, mono, constant(9, 100*time.Millisecond))
			time.Sleep(10 * time.Second)
			synctest.Wait()
			got := len(out.played())
			switch {
			case keep == 0 && got != rate/10:
				t.Fatalf("no keep_fed: %d samples written, want the beep's 1600 only", got)
			case keep > 0 && (got < 10*rate-int(keep.Seconds()*rate) || got > 10*rate+int(keep.Seconds()*rate)):
				t.Fatalf("keep_fed %v: %d samples written in 10 s, want 10 s ± one block", keep, got)
			}
		})
	}
}

// TestTheSlotDropsInRealTimeWithoutADevice: while no device is plugged in,
// the mixer's output is dropped at the pace it would play (no busy loop);
// once one is, it gets what plays.
func TestTheSlotDropsInRealTimeWithoutADevice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot := mixer.NewSlot(rate)
		start := time.Now()
		if n, err := slot.Write(constant(1, time.Second)); n != rate || err != nil {
			t.Fatalf("write without a device: %d %v", n, err)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("a second dropped in %v", d)
		}
		dev := &speaker{}
		if prev := slot.Set(dev); prev != nil || !slot.Plugged() {
			t.Fatal("Set did not plug the device in")
		}
		slot.Write(constant(5, 10*time.Millisecond))
		if got := dev.played(); len(got) != 160 || got[0] != 5 {
			t.Fatalf("the device got %d samples", len(got))
		}
		if prev := slot.Set(nil); prev != dev || slot.Plugged() {
			t.Fatal("Set(nil) did not unplug the device")
		}
	})
}

// TestARingOrAnAnnouncementThatIsPausedOrSilentDucksNothing: a ring or an
// announcement stream ducks only while it plays: one that is paused, that
// was opened and given no sound (a plugin that sent only the header), or
// whose writer stopped, leaves the reply and the media whole; while it has
// sound it ducks them.
func TestARingOrAnAnnouncementThatIsPausedOrSilentDucksNothing(t *testing.T) {
	for _, c := range []struct {
		name  string
		class mixer.Class
		sound bool // 60 ms of 10000, then nothing
		pause bool
		over  int16 // the mix while it sounds: reply + media + it
	}{
		{"ring header only", mixer.Ring, false, false, 0},
		{"ring paused", mixer.Ring, true, true, 0},
		{"ring stalled", mixer.Ring, true, false, 100 + 10 + 10000},
		{"announcement header only", mixer.Announcement, false, false, 0},
		{"announcement paused", mixer.Announcement, true, true, 0},
		{"announcement stalled", mixer.Announcement, true, false, 1000 + 10 + 10000},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				out := &speaker{}
				m := mixer.New(out, mixer.Options{Rate: rate})
				s, err := m.Open("plugin:x/alarm", c.class, mono)
				if err != nil {
					t.Fatal(err)
				}
				if c.sound {
					s.Write(constant(10000, 60*time.Millisecond)) // fits in the buffer
				}
				s.Pause(c.pause)
				play(t, m, "reply", mixer.Voice, mono, constant(1000, time.Second))
				play(t, m, "radio", mixer.Media, mono, constant(100, time.Second))
				synctest.Wait()
				run(t, m)
				time.Sleep(2 * time.Second)
				synctest.Wait()
				got := out.played()
				if c.over != 0 {
					if v := got[30*rate/1000]; v != c.over {
						t.Fatalf("while it sounds: %d, want %d", v, c.over)
					}
				}
				if v := got[500*rate/1000]; v != 1100 {
					t.Fatalf("%s: the mix is %d, want the reply (1000) and the media (100) whole; status %+v", c.name, v, m.Status())
				}
				s.Stop()
			})
		})
	}
}

// TestMediaAndAnnouncementsLeaveRoomForTheSpeakersOwnStreams: plugins'
// media and announcements may fill the mixer only up to MaxStreams less
// four, so that a reply (and the one playing out), an earcon and a ring
// still open; the refusal says why.
func TestMediaAndAnnouncementsLeaveRoomForTheSpeakersOwnStreams(t *testing.T) {
	m := mixer.New(&speaker{}, mixer.Options{Rate: rate}) // 16 streams
	var refused error
	opened := 0
	for i := range 16 {
		c := mixer.Media
		if i%2 == 1 {
			c = mixer.Announcement
		}
		if _, err := m.Open("plugin:x/radio", c, mono); err != nil {
			refused = err
			break
		}
		opened++
	}
	if opened != 12 || refused == nil || !strings.Contains(refused.Error(), "kept for") {
		t.Fatalf("%d media and announcement streams opened of 16, then %v; want 12, then a refusal saying what is kept for what", opened, refused)
	}
	for _, c := range []mixer.Class{mixer.Voice, mixer.Voice, mixer.Earcon, mixer.Ring} {
		if _, err := m.Open("own", c, mono); err != nil {
			t.Fatalf("a %v stream with 12 plugin streams open: %v", c, err)
		}
	}
	if _, err := m.Open("one more", mixer.Voice, mono); err == nil {
		t.Fatal("a 17th stream opened")
	}
}

// TestStartAtHoldsAStreamUntilItsInstant: streams of a class opened after
// StartAt sound from its instant, not before (so that several speakers start
// one announcement together, each having decoded ahead); a stream of another
// class sounds at once, and the held one's position counts from its start.
func TestStartAtHoldsAStreamUntilItsInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &speaker{}
		m := mixer.New(out, mixer.Options{Rate: rate, Buffer: time.Second})
		run(t, m)
		start := time.Now()
		m.StartAt(mixer.Announcement, start.Add(500*time.Millisecond))
		play(t, m, "news", mixer.Announcement, mono, constant(1000, time.Second))
		play(t, m, "song", mixer.Media, mono, constant(300, time.Second))
		position := func() (news, song time.Duration) {
			for _, s := range m.Status() {
				switch s.Class {
				case "announcement":
					news = s.Position
				case "media":
					song = s.Position
				}
			}
			return
		}
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		if news, song := position(); news != 0 || song < 250*time.Millisecond {
			t.Fatalf("at 300 ms: the held announcement at %v (want 0), the music at %v (want about 300 ms)", news, song)
		}
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		if news, _ := position(); news < 150*time.Millisecond || news > 250*time.Millisecond {
			t.Fatalf("at 700 ms: the announcement at %v, want about 200 ms (it starts at 500 ms)", news)
		}
		// Once the instant has passed, a stream of the class sounds at once.
		time.Sleep(time.Second)
		play(t, m, "later", mixer.Announcement, mono, constant(1000, time.Second))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if news, _ := position(); news < 150*time.Millisecond {
			t.Fatalf("an announcement after the instant is at %v 200 ms after it opened: held still", news)
		}
	})
}

// TestSoundedWithinSaysWhenTheSpeakerLastSounded: before any sound, and a
// while after the last, the mixer says the speaker has not sounded within
// the span asked; while a stream plays, and just after, it has.
func TestSoundedWithinSaysWhenTheSpeakerLastSounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mixer.New(&speaker{}, mixer.Options{Rate: rate, Buffer: time.Second})
		run(t, m)
		if m.SoundedWithin(time.Second) {
			t.Fatal("sounded before any stream")
		}
		play(t, m, "reply", mixer.Voice, mono, constant(1000, 500*time.Millisecond))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if !m.SoundedWithin(time.Second) {
			t.Fatal("not sounding while a reply plays")
		}
		time.Sleep(time.Second) // the reply ended 700 ms ago
		synctest.Wait()
		if !m.SoundedWithin(time.Second) || m.SoundedWithin(500*time.Millisecond) {
			t.Fatalf("700 ms after the reply: within 1 s %v (want true), within 500 ms %v (want false)", m.SoundedWithin(time.Second), m.SoundedWithin(500*time.Millisecond))
		}
	})
}
