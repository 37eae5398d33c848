package timers_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	_ "time/tzdata" // the zones of the DST tests, whatever the machine has

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/internal/statefile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rec records what fired, and when by the scheduler's clock.
type rec struct {
	mu    sync.Mutex
	now   func() time.Time
	fired []timers.Fired
	at    []time.Time
}

func (r *rec) fire(f timers.Fired) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fired = append(r.fired, f)
	r.at = append(r.at, r.now())
}

func (r *rec) take() ([]timers.Fired, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, a := r.fired, r.at
	r.fired, r.at = nil, nil
	return f, a
}

// clock is a settable offset from synctest's fake clock (which starts at
// 2000-01-01 UTC), so a test can start on a day of its choice and set the
// wall clock as NTP would.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func startAt(t time.Time) *clock {
	return &clock{off: time.Until(t)}
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) jump(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// run starts s in the bubble; the returned stop ends it.
func run(s *timers.Scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func newSched(t *testing.T, o timers.Options, r *rec) *timers.Scheduler {
	t.Helper()
	o.Fire = r.fire
	if o.Now != nil {
		r.now = o.Now
	} else {
		r.now = time.Now
	}
	s, err := timers.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTimerRingsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		s := newSched(t, timers.Options{}, r)
		stop := run(s)
		defer stop()
		start := time.Now()
		e, err := s.AddTimer(5*time.Minute, " tea ")
		if err != nil || e.ID != "1" || e.Label != "tea" || e.Seconds != 300 {
			t.Fatalf("AddTimer: %+v %v", e, err)
		}
		time.Sleep(5*time.Minute - time.Second)
		synctest.Wait()
		if f, _ := r.take(); len(f) != 0 {
			t.Fatalf("fired early: %+v", f)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		f, at := r.take()
		if len(f) != 1 || f[0].Entry.Label != "tea" || f[0].Missed {
			t.Fatalf("fired %+v", f)
		}
		if got := at[0].Sub(start); got != 5*time.Minute {
			t.Errorf("rang after %s, want 5m0s", got)
		}
		if n := s.Stats().Pending; n != 0 {
			t.Errorf("%d pending after it rang", n)
		}
	})
}

// TestManyTimersAndFigures: 1,000 timers over 24 hours of the fake clock
// each ring exactly when due, in order; the figures of the issue (memory
// of the entries, wake-ups per minute while idle) are logged.
func TestManyTimersAndFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		// In memory: a thousand synced writes of a growing file would be
		// most of the test's time (the file's size is logged below).
		s := newSched(t, timers.Options{Max: 1000}, r)
		stop := run(s)
		defer stop()
		rng := rand.New(rand.NewPCG(1, 2))
		start := time.Now()
		want := map[string]time.Duration{}
		for i := range 1000 {
			d := time.Duration(1+rng.IntN(24*3600)) * time.Second
			e, err := s.AddTimer(d, "t"+string(rune('a'+i%26)))
			if err != nil {
				t.Fatalf("timer %d: %v", i, err)
			}
			want[e.ID] = d
		}
		if _, err := s.AddTimer(time.Minute, "one too many"); err == nil || !strings.Contains(err.Error(), "device.timers.max") {
			t.Errorf("the 1,001st timer: %v", err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		doc, _ := json.MarshalIndent(s.List(), "", "  ")
		synctest.Wait()
		// An idle hour: nothing is due for the first minute on purpose.
		wake0 := s.Stats().WakeUps
		var idleMinutes, idleWakeups int64
		fired := 0
		var last time.Time
		for minute := 0; minute < 24*60+1; minute++ {
			w := s.Stats().WakeUps
			time.Sleep(time.Minute)
			synctest.Wait()
			f, at := r.take()
			if len(f) == 0 {
				idleMinutes++
				idleWakeups += s.Stats().WakeUps - w
			}
			for i, x := range f {
				fired++
				if got, want := at[i].Sub(start), want[x.Entry.ID]; got != want {
					t.Fatalf("timer %s rang after %s, want %s", x.Entry.ID, got, want)
				}
				if at[i].Before(last) {
					t.Fatalf("timer %s rang out of order", x.Entry.ID)
				}
				last = at[i]
			}
		}
		if fired != 1000 {
			t.Fatalf("%d of 1000 rang", fired)
		}
		st := s.Stats()
		t.Logf("1,000 timers over 24 h (fake clock): entries' heap %.0f KiB (%.0f B each), state file %d KiB; "+
			"wake-ups %d in all for %d firings; idle minutes %d with %d wake-ups (%.3f per idle minute)",
			float64(after.HeapAlloc-before.HeapAlloc)/1024, float64(after.HeapAlloc-before.HeapAlloc)/1000, len(doc)>>10,
			st.WakeUps-wake0, st.Fired, idleMinutes, idleWakeups, float64(idleWakeups)/float64(max(idleMinutes, 1)))
		if idleWakeups != 0 {
			t.Errorf("%d wake-ups in minutes when nothing was due: timers need none", idleWakeups)
		}
	})
}

// TestAlarmsWhilePendingWakeOncePerMinute: an alarm is measured by the wall
// clock, which may be set, so the scheduler looks again once a minute and
// no more.
func TestAlarmsWakeOncePerMinuteAndFollowAClockThatIsSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startAt(time.Date(2025, 6, 2, 6, 0, 0, 0, time.UTC))
		r := &rec{}
		s := newSched(t, timers.Options{Location: time.UTC, Now: c.now, Grace: time.Hour}, r)
		stop := run(s)
		defer stop()
		if _, err := s.AddAlarm("09:00", nil, "", "meeting"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		w := s.Stats().WakeUps
		time.Sleep(60 * time.Minute)
		synctest.Wait()
		if n := s.Stats().WakeUps - w; n != 60 {
			t.Errorf("%d wake-ups in an hour with an alarm pending, want 60", n)
		}
		// NTP sets the clock 2 h 30 m forward: the alarm is 30 minutes
		// late, within the grace, and rings at the next look.
		c.jump(150 * time.Minute)
		time.Sleep(time.Minute)
		synctest.Wait()
		f, _ := r.take()
		if len(f) != 1 || f[0].Missed || f[0].Late < 30*time.Minute {
			t.Fatalf("after the clock was set: %+v", f)
		}
	})
}

// TestAlarmsFollowDaylightSaving: in a zone that changes its offset during
// the test, a daily alarm keeps its time of day (23 and 25 hours apart
// across the changes), an alarm in the hour that is skipped rings when the
// clock jumps over it, and one in the hour shown twice rings once.
func TestAlarmsFollowDaylightSaving(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	type ring struct{ label, at string }
	for _, tc := range []struct {
		name   string
		start  time.Time
		alarms func(s *timers.Scheduler) error
		hours  int
		want   []ring // label, local time rung (RFC3339 in Berlin)
	}{
		{"spring forward", time.Date(2024, 3, 29, 12, 0, 0, 0, berlin), func(s *timers.Scheduler) error {
			if _, err := s.AddAlarm("07:00", []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}, "", "daily"); err != nil {
				return err
			}
			_, err := s.AddAlarm("02:30", nil, "2024-03-31", "in the gap")
			return err
		}, 72, []ring{
			{"daily", "2024-03-30T07:00:00+01:00"}, {"in the gap", "2024-03-31T03:00:00+02:00"},
			{"daily", "2024-03-31T07:00:00+02:00"}, {"daily", "2024-04-01T07:00:00+02:00"},
		}},
		{"fall back", time.Date(2024, 10, 26, 12, 0, 0, 0, berlin), func(s *timers.Scheduler) error {
			if _, err := s.AddAlarm("07:00", []string{"sat", "sun", "mon"}, "", "daily"); err != nil {
				return err
			}
			_, err := s.AddAlarm("02:30", nil, "2024-10-27", "twice shown")
			return err
		}, 72, []ring{
			{"twice shown", "2024-10-27T02:30:00+02:00"}, {"daily", "2024-10-27T07:00:00+01:00"},
			{"daily", "2024-10-28T07:00:00+01:00"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startAt(tc.start)
				r := &rec{}
				s := newSched(t, timers.Options{Location: berlin, Now: c.now}, r)
				stop := run(s)
				defer stop()
				if err := tc.alarms(s); err != nil {
					t.Fatal(err)
				}
				var got []ring
				for range tc.hours * 60 {
					time.Sleep(time.Minute)
					synctest.Wait()
					f, at := r.take()
					for i := range f {
						got = append(got, ring{f[i].Entry.Label, at[i].In(berlin).Format(time.RFC3339)})
					}
				}
				if len(got) != len(tc.want) {
					t.Fatalf("rang %v, want %v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("ring %d: %v, want %v", i, got[i], tc.want[i])
					}
				}
			})
		})
	}
}

// TestRestartRingsLateOrReportsMissed: entries are kept in the state file;
// one that came due while the scheduler was not running rings at start
// when it is less than Grace late, and is reported missed otherwise.
func TestRestartRingsLateOrReportsMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "timers.json")
		c := startAt(time.Date(2025, 1, 10, 8, 0, 0, 0, time.UTC))
		r := &rec{}
		o := timers.Options{Path: path, Location: time.UTC, Grace: 10 * time.Minute, Now: c.now}
		s := newSched(t, o, r)
		stop := run(s)
		s.AddTimer(time.Minute, "soon")
		s.AddTimer(30*time.Minute, "later")
		s.AddAlarm("09:00", []string{"fri", "sat"}, "", "weekly")
		s.AddTimer(5*time.Hour, "much later")
		synctest.Wait()
		stop() // the host stops
		time.Sleep(5 * time.Minute)
		c.jump(3 * time.Minute) // down for 8 minutes by the wall clock: "soon" is 7 minutes late
		s2 := newSched(t, o, r)
		if n := len(s2.List()); n != 4 {
			t.Fatalf("%d entries after the restart, want 4", n)
		}
		stop2 := run(s2)
		synctest.Wait()
		f, _ := r.take()
		if len(f) != 1 || f[0].Entry.Label != "soon" || f[0].Missed || f[0].Late != 7*time.Minute {
			t.Fatalf("at restart: %+v", f)
		}
		stop2()
		c.jump(2 * time.Hour) // down until 10:10: "later" and the 09:00 alarm are past the grace
		s3 := newSched(t, o, r)
		stop3 := run(s3)
		defer stop3()
		synctest.Wait()
		f, _ = r.take()
		if len(f) != 2 || !f[0].Missed || f[0].Entry.Label != "later" || !f[1].Missed || f[1].Entry.Label != "weekly" {
			t.Fatalf("after a long stop: %+v", f)
		}
		if want := time.Date(2025, 1, 11, 9, 0, 0, 0, time.UTC); !f[1].Next.Equal(want) {
			t.Errorf("the weekly alarm rings next at %s, want %s", f[1].Next, want)
		}
		left := s3.List()
		if len(left) != 2 || left[0].Label != "much later" || left[1].Label != "weekly" {
			t.Errorf("left: %+v", left)
		}
	})
}

func TestCorruptStateFileIsSetAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timers.json")
	os.WriteFile(path, []byte(`{"version":1,"entries":[{"id":`), 0o600)
	s, err := timers.New(timers.Options{Path: path})
	var ce *statefile.CorruptError
	if !errors.As(err, &ce) || s == nil {
		t.Fatalf("New: %v", err)
	}
	if len(s.List()) != 0 {
		t.Fatal("entries from a corrupt file")
	}
	if _, err := os.Stat(ce.SetAside); err != nil {
		t.Fatalf("not set aside: %v", err)
	}
	if _, err := s.AddTimer(time.Minute, ""); err != nil {
		t.Fatalf("a timer after the corrupt file: %v", err)
	}
	s2, err := timers.New(timers.Options{Path: path})
	if err != nil || len(s2.List()) != 1 {
		t.Fatalf("the new file: %v, %+v", err, s2.List())
	}
}

// TestBadInputSchedulesNothing: every bad length, time, day, date or label
// is a clear error, and nothing is set.
func TestBadInputSchedulesNothing(t *testing.T) {
	s, _ := timers.New(timers.Options{Location: time.UTC, Now: func() time.Time { return time.Date(2025, 5, 5, 12, 0, 0, 0, time.UTC) }})
	for _, c := range []struct {
		do   func() error
		want string
	}{
		{func() error { _, err := s.AddTimer(0, ""); return err }, "at least 1 second"},
		{func() error { _, err := s.AddTimer(8*24*time.Hour, ""); return err }, "at most 168h0m0s"},
		{func() error { _, err := s.AddTimer(time.Minute, strings.Repeat("x", 65)); return err }, "at most 64"},
		{func() error { _, err := s.AddAlarm("25:00", nil, "", ""); return err }, `time "25:00" is not a time of day like 07:30`},
		{func() error { _, err := s.AddAlarm("7.30", nil, "", ""); return err }, "HH:MM"},
		{func() error { _, err := s.AddAlarm("07:30", []string{"monday"}, "", ""); return err }, `day "monday" is not one of mon, tue`},
		{func() error { _, err := s.AddAlarm("07:30", []string{"mon"}, "2025-06-01", ""); return err }, "not both"},
		{func() error { _, err := s.AddAlarm("07:30", nil, "2025-13-01", ""); return err }, "is not a date like"},
		{func() error { _, err := s.AddAlarm("07:30", nil, "2025-05-05", ""); return err }, "has already passed"},
		{func() error { _, err := s.AddAlarm("07:30", nil, "2027-05-05", ""); return err }, "more than a year ahead"},
		{func() error { _, err := s.Cancel("9", "", false); return err }, `no timer or alarm has id "9"; there are none`},
		{func() error { _, err := s.Cancel("", "", false); return err }, "say which"},
	} {
		err := c.do()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
	if n := len(s.List()); n != 0 {
		t.Errorf("%d entries set by bad input", n)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"5m": 5 * time.Minute, "1h30m": 90 * time.Minute, "90s": 90 * time.Second, "1.5h": 90 * time.Minute,
		"10 minutes": 10 * time.Minute, "1 hour and 30 minutes": 90 * time.Minute, "300": 5 * time.Minute, " 2 MIN ": 2 * time.Minute,
	} {
		if got, err := timers.ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %s, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"": "is not a length", "abc": "is not a length", "5 parsecs": "is not a length", "0s": "at least 1 second",
		"8d": "is not a length", "200h": "at most", "99999999999h": "at most", "-5m": "is not a length",
	} {
		if _, err := timers.ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", in, err, want)
		}
	}
}

func TestCancel(t *testing.T) {
	s, _ := timers.New(timers.Options{})
	s.AddTimer(time.Minute, "Tea")
	s.AddTimer(2*time.Minute, "tea")
	s.AddTimer(3*time.Minute, "eggs")
	gone, err := s.Cancel("", "TEA", false)
	if err != nil || len(gone) != 2 {
		t.Fatalf("by label: %+v %v", gone, err)
	}
	gone, err = s.Cancel("3", "", false)
	if err != nil || len(gone) != 1 || gone[0].Label != "eggs" {
		t.Fatalf("by id: %+v %v", gone, err)
	}
	s.AddTimer(time.Minute, "")
	s.AddTimer(time.Minute, "")
	if gone, err := s.Cancel("", "", true); err != nil || len(gone) != 2 || len(s.List()) != 0 {
		t.Fatalf("all: %+v %v", gone, err)
	}
}

// TestSkippedTimesRingAtTheJumpInEveryZone: on the day a zone's clock
// jumps forward, east or west of Greenwich, at 02:00 or at midnight, by an
// hour or half an hour, an alarm at a time the clock skips rings at the
// jump on the day asked, one at another time on that date rings on that
// date, and a daily alarm at the skipped time keeps that day too.
func TestSkippedTimesRingAtTheJumpInEveryZone(t *testing.T) {
	type ring struct{ label, at string }
	for _, tc := range []struct {
		zone, date, skipped, jump string // jump: the local time the clock jumps to
		before, after             string // the skipped time the days before and after (RFC3339)
	}{
		{"America/New_York", "2027-03-14", "02:30", "2027-03-14T03:00:00-04:00", "2027-03-13T02:30:00-05:00", "2027-03-15T02:30:00-04:00"},
		{"America/Santiago", "2027-09-05", "00:30", "2027-09-05T01:00:00-03:00", "2027-09-04T00:30:00-04:00", "2027-09-06T00:30:00-03:00"},
		{"Atlantic/Azores", "2027-03-28", "00:30", "2027-03-28T01:00:00Z", "2027-03-27T00:30:00-01:00", "2027-03-29T00:30:00Z"},
		{"Australia/Lord_Howe", "2027-10-03", "02:15", "2027-10-03T02:30:00+11:00", "2027-10-02T02:15:00+10:30", "2027-10-04T02:15:00+11:00"},
		{"Europe/Berlin", "2027-03-28", "02:30", "2027-03-28T03:00:00+02:00", "2027-03-27T02:30:00+01:00", "2027-03-29T02:30:00+02:00"},
	} {
		t.Run(tc.zone, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			day, _ := time.Parse(time.DateOnly, tc.date)
			start := time.Date(day.Year(), day.Month(), day.Day()-2, 12, 0, 0, 0, loc)
			want := []ring{{"daily", tc.before}, {"daily", tc.jump}, {"in the gap", tc.jump},
				{"that day", tc.date + "T07:00:00" + strings.TrimPrefix(tc.after, tc.after[:19])}, {"daily", tc.after}}
			synctest.Test(t, func(t *testing.T) {
				c := startAt(start)
				r := &rec{}
				s := newSched(t, timers.Options{Location: loc, Now: c.now}, r)
				stop := run(s)
				defer stop()
				if _, err := s.AddAlarm(tc.skipped, timers.DayNames, "", "daily"); err != nil {
					t.Fatal(err)
				}
				if _, err := s.AddAlarm(tc.skipped, nil, tc.date, "in the gap"); err != nil {
					t.Fatal(err)
				}
				if _, err := s.AddAlarm("07:00", nil, tc.date, "that day"); err != nil {
					t.Fatal(err)
				}
				var got []ring
				for range 72 * 60 {
					time.Sleep(time.Minute)
					synctest.Wait()
					f, at := r.take()
					for i := range f {
						got = append(got, ring{f[i].Entry.Label, at[i].In(loc).Format(time.RFC3339)})
					}
				}
				slices.SortFunc(got, func(a, b ring) int { return cmp.Or(strings.Compare(a.at, b.at), strings.Compare(a.label, b.label)) })
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("rang\n%v\nwant\n%v", got, want)
				}
			})
		})
	}
}
