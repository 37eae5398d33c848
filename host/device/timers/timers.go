// Package timers keeps the speaker's timers and alarms: a Scheduler that
// holds them in a state file (written atomically, read back at start),
// sleeps until the next one is due and hands each one that comes due to a
// callback. What ringing sounds like is the caller's business.
//
// A timer is a length of time and is measured on the monotonic clock while
// the host runs, so a clock that NTP sets does not move it. An alarm is a
// time of day in a time zone (optionally on some days of the week, or on
// one date): its next time is worked out in that zone, so it follows
// daylight saving; the wall clock is looked at again at least every
// Options.Recheck, so a clock that is set catches up within that. An entry
// that came due while the host was not running rings at start when it is
// less than Options.Grace late, and is otherwise reported as missed.
package timers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/internal/statefile"
)

// Kind is what an entry is.
type Kind string

// The kinds of entries.
const (
	Timer Kind = "timer"
	Alarm Kind = "alarm"
)

// Entry is one timer or alarm.
type Entry struct {
	ID    string `json:"id"`
	Kind  Kind   `json:"kind"`
	Label string `json:"label,omitempty"`
	// Due is when it rings next.
	Due time.Time `json:"due"`
	// Seconds is a timer's length.
	Seconds int64 `json:"seconds,omitempty"`
	// At is an alarm's time of day ("07:30") in the scheduler's zone;
	// Days the days it repeats on (none: once), or Date the one day it
	// rings on ("2025-03-30").
	At      string    `json:"at,omitempty"`
	Days    []string  `json:"days,omitempty"`
	Date    string    `json:"date,omitempty"`
	Created time.Time `json:"created"`

	// mono is Due with the monotonic clock's reading, for timers set while
	// this process runs.
	mono time.Time
}

// Name is how the entry is called in messages: its label, or "the
// 5-minute timer" / "the 07:30 alarm".
func (e Entry) Name() string {
	if e.Label != "" {
		return fmt.Sprintf("%s %q", e.Kind, e.Label)
	}
	if e.Kind == Timer {
		return fmt.Sprintf("the %s timer", time.Duration(e.Seconds)*time.Second)
	}
	return fmt.Sprintf("the %s alarm", e.At)
}

// Repeats reports whether the entry rings again after it rang.
func (e Entry) Repeats() bool { return e.Kind == Alarm && len(e.Days) > 0 }

// remaining is how long until e is due: on the monotonic clock for a timer
// set in this run, else on the wall clock.
func (e *Entry) remaining(now time.Time) time.Duration {
	if !e.mono.IsZero() {
		return e.mono.Sub(now)
	}
	return e.Due.Sub(now.Round(0))
}

// Fired is an entry that came due.
type Fired struct {
	Entry Entry
	// Late is how long after Due it was noticed (the host was down, or the
	// clock was set forward).
	Late time.Duration
	// Missed: it came due more than Options.Grace ago; it does not ring.
	Missed bool
	// Next is when a repeating alarm rings again (zero otherwise).
	Next time.Time
}

// Options configure a Scheduler. Zero values take the defaults.
type Options struct {
	// Path is the state file; "" keeps the entries in memory only.
	Path string
	// Location is the zone of alarms (time.Local when nil).
	Location *time.Location
	// Grace: an entry that came due less than this long ago still rings
	// (default 10 minutes).
	Grace time.Duration
	// Max bounds the entries (default 100).
	Max int
	// Recheck is the longest sleep while an entry is due by the wall clock
	// (default 1 minute).
	Recheck time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	Log *slog.Logger
	// Fire is called, from Run's goroutine, with each entry that came due.
	Fire func(Fired)
}

// Stats are a scheduler's counters.
type Stats struct {
	Pending int
	// WakeUps counts the times Run woke on its own timer.
	WakeUps int64
	// Fired counts the entries that came due (rang or missed).
	Fired int64
}

// Scheduler holds the entries and runs them.
type Scheduler struct {
	o    Options
	wake chan struct{}

	mu      sync.Mutex
	entries []Entry
	nextID  int
	wakeups int64
	fired   int64
}

// document is the state file.
type document struct {
	Version int     `json:"version"`
	NextID  int     `json:"next_id"`
	Entries []Entry `json:"entries"`
}

const docVersion = 1

// New returns a scheduler with the entries of o.Path. A state file that
// cannot be read is set aside and reported (a *statefile.CorruptError);
// the scheduler then starts empty, and is returned all the same.
func New(o Options) (*Scheduler, error) {
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Minute
	}
	if o.Max <= 0 {
		o.Max = 100
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Fire == nil {
		o.Fire = func(Fired) {}
	}
	s := &Scheduler{o: o, wake: make(chan struct{}, 1), nextID: 1}
	if o.Path == "" {
		return s, nil
	}
	var doc document
	found, err := statefile.Read(o.Path, &doc)
	if err != nil || !found {
		return s, err
	}
	if doc.Version != docVersion {
		return s, fmt.Errorf("%s is of version %d, not %d; its timers are not read", o.Path, doc.Version, docVersion)
	}
	for _, e := range doc.Entries {
		if err := validEntry(e); err != nil {
			o.Log.Warn("a saved timer is not valid and is dropped", "id", e.ID, "err", err)
			continue
		}
		s.entries = append(s.entries, e)
	}
	s.nextID = max(doc.NextID, 1)
	return s, nil
}

func validEntry(e Entry) error {
	switch {
	case e.ID == "" || e.Due.IsZero():
		return errors.New("no id or no due time")
	case e.Kind == Timer:
		return nil
	case e.Kind == Alarm:
		if _, _, err := ParseClock(e.At); err != nil {
			return err
		}
		_, err := ParseDays(e.Days)
		return err
	}
	return fmt.Errorf("unknown kind %q", e.Kind)
}

// save writes the state file; s.mu held.
func (s *Scheduler) save() error {
	if s.o.Path == "" {
		return nil
	}
	return statefile.Write(s.o.Path, document{Version: docVersion, NextID: s.nextID, Entries: s.entries})
}

// SaveError is returned with an entry that was set (or cancelled) but
// could not be saved: it holds until the host stops.
type SaveError struct{ Err error }

func (e *SaveError) Error() string {
	return fmt.Sprintf("it could not be saved and will be forgotten if the speaker restarts: %v", e.Err)
}
func (e *SaveError) Unwrap() error { return e.Err }

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// add takes e (its Due set) as a new entry.
func (s *Scheduler) add(e Entry) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) >= s.o.Max {
		return Entry{}, fmt.Errorf("there are already %d timers and alarms, the most the speaker keeps (device.timers.max); cancel one first", len(s.entries))
	}
	e.ID = strconv.Itoa(s.nextID)
	s.nextID++
	e.Created = s.o.Now().Round(0)
	s.entries = append(s.entries, e)
	err := s.save()
	s.signal()
	if err != nil {
		return e, &SaveError{err}
	}
	return e, nil
}

// AddTimer sets a timer of length d (see ParseDuration's bounds).
func (s *Scheduler) AddTimer(d time.Duration, label string) (Entry, error) {
	d, err := checkLength(d)
	if err != nil {
		return Entry{}, err
	}
	if label, err = CleanLabel(label); err != nil {
		return Entry{}, err
	}
	mono := s.o.Now().Add(d)
	return s.add(Entry{Kind: Timer, Label: label, Seconds: int64(d / time.Second), Due: mono.Round(0), mono: mono})
}

// AddAlarm sets an alarm at the time of day at ("HH:MM"), repeating on
// days, or once on date ("YYYY-MM-DD"), or else once at the next at.
func (s *Scheduler) AddAlarm(at string, days []string, date, label string) (Entry, error) {
	hour, minute, err := ParseClock(at)
	if err != nil {
		return Entry{}, err
	}
	if days, err = ParseDays(days); err != nil {
		return Entry{}, err
	}
	if label, err = CleanLabel(label); err != nil {
		return Entry{}, err
	}
	date = strings.TrimSpace(date)
	if date != "" && len(days) > 0 {
		return Entry{}, errors.New("give days (to repeat every week) or a date (to ring once), not both")
	}
	now := s.o.Now()
	e := Entry{Kind: Alarm, Label: label, At: fmt.Sprintf("%02d:%02d", hour, minute), Days: days, Date: date}
	if date != "" {
		// The day as a date, not an instant: in loc its midnight may not
		// exist (clocks jumping at midnight) and would fall on the day before.
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return Entry{}, fmt.Errorf("date %q is not a date like 2025-03-30 (YYYY-MM-DD)", clipped(date))
		}
		e.Date = d.Format(time.DateOnly)
		e.Due = wallTime(d.Year(), d.Month(), d.Day(), hour, minute, s.o.Location)
		if !e.Due.After(now) {
			return Entry{}, fmt.Errorf("%s at %s has already passed (it is %s now)", e.Date, e.At, now.In(s.o.Location).Format("2006-01-02 15:04"))
		}
		if e.Due.Sub(now) > MaxAhead {
			return Entry{}, fmt.Errorf("%s is more than a year ahead", e.Date)
		}
	} else {
		e.Due = nextAlarm(e, now, s.o.Location)
	}
	return s.add(e)
}

// Cancel removes the entry with id, or those whose label is label (any
// case), or all of them. It returns what it removed; nothing matching is an
// error that lists what there is.
func (s *Scheduler) Cancel(id, label string, all bool) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	label = strings.TrimSpace(label)
	id = strings.TrimSpace(id)
	if !all && id == "" && label == "" {
		return nil, errors.New("say which: an id, a label, or all")
	}
	var gone, kept []Entry
	for _, e := range s.entries {
		if all || (id != "" && e.ID == id) || (label != "" && strings.EqualFold(e.Label, label)) {
			gone = append(gone, e)
		} else {
			kept = append(kept, e)
		}
	}
	if len(gone) == 0 {
		if all {
			return nil, nil
		}
		what := "id " + strconv.Quote(clipped(id))
		if id == "" {
			what = "the label " + strconv.Quote(clipped(label))
		}
		return nil, fmt.Errorf("no timer or alarm has %s; %s", what, s.summaryLocked())
	}
	s.entries = kept
	err := s.save()
	s.signal()
	if err != nil {
		return gone, &SaveError{err}
	}
	return gone, nil
}

// summaryLocked lists the entries for an error message; s.mu held.
func (s *Scheduler) summaryLocked() string {
	if len(s.entries) == 0 {
		return "there are none"
	}
	var parts []string
	for i, e := range s.entries {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(s.entries)-i))
			break
		}
		parts = append(parts, e.ID+" ("+e.Name()+")")
	}
	return "there are: " + strings.Join(parts, ", ")
}

// List returns the entries, soonest first.
func (s *Scheduler) List() []Entry {
	s.mu.Lock()
	out := slices.Clone(s.entries)
	s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Entry) int { return a.Due.Compare(b.Due) })
	return out
}

// Stats reports the counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Pending: len(s.entries), WakeUps: s.wakeups, Fired: s.fired}
}

// Location is the zone of the alarms.
func (s *Scheduler) Location() *time.Location { return s.o.Location }

// Run rings the entries as they come due until ctx ends. Entries that came
// due before Run started are handled first (ringing late, or missed).
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		fired, sleep := s.step()
		for _, f := range fired {
			s.o.Fire(f)
		}
		if sleep > 0 {
			t.Reset(sleep)
		}
		select {
		case <-t.C:
			s.mu.Lock()
			s.wakeups++
			s.mu.Unlock()
		case <-s.wake:
			t.Stop()
		case <-ctx.Done():
			return
		}
	}
}

// step takes out what is due and says how long to sleep (0: until woken).
func (s *Scheduler) step() ([]Fired, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	var fired []Fired
	kept := s.entries[:0]
	for _, e := range s.entries {
		left := e.remaining(now)
		if left > 0 {
			kept = append(kept, e)
			continue
		}
		f := Fired{Entry: e, Late: -left}
		f.Missed = e.mono.IsZero() && f.Late > s.o.Grace
		if e.Repeats() {
			next := e
			next.Due, next.mono = nextAlarm(e, now, s.o.Location), time.Time{}
			f.Next = next.Due
			kept = append(kept, next)
		}
		fired = append(fired, f)
	}
	s.entries = kept
	if len(fired) > 0 {
		s.fired += int64(len(fired))
		if err := s.save(); err != nil {
			s.o.Log.Warn("the timers could not be saved; a restart may ring one again", "err", err)
		}
	}
	slices.SortFunc(fired, func(a, b Fired) int { return a.Entry.Due.Compare(b.Entry.Due) })
	sleep := time.Duration(0)
	for i := range s.entries {
		d := s.entries[i].remaining(now)
		if s.entries[i].mono.IsZero() {
			d = min(d, s.o.Recheck)
		}
		if sleep == 0 || d < sleep {
			sleep = d
		}
	}
	return fired, sleep
}

// nextAlarm is when alarm e rings next after now: its time of day on the
// first day (today on) that is one of its days, if it has any, and that
// time is still ahead.
func nextAlarm(e Entry, now time.Time, loc *time.Location) time.Time {
	hour, minute, _ := ParseClock(e.At)
	local := now.In(loc)
	for i := 0; i <= 8; i++ {
		y, m, d := local.Date()
		day := time.Date(y, m, d+i, 12, 0, 0, 0, loc)
		if len(e.Days) > 0 && !hasDay(e.Days, day.Weekday()) {
			continue
		}
		t := wallTime(day.Year(), day.Month(), day.Day(), hour, minute, loc)
		if t.After(now.Round(0)) {
			return t
		}
	}
	return now.Round(0).Add(24 * time.Hour) // not reached: some day within 8 fits
}

func hasDay(days []string, wd time.Weekday) bool {
	for _, n := range days {
		if w, ok := weekday(n); ok && w == wd {
			return true
		}
	}
	return false
}

// wallClock is what t's clock shows, as a time in UTC (to compare).
func wallClock(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// wallTime is the first instant at which the clock in loc shows hh:mm on
// that day: where the clock jumps over hh:mm (daylight saving starts) it is
// the moment of the jump, and where it shows hh:mm twice (it ends), the
// first time.
func wallTime(year int, month time.Month, day, hour, minute int, loc *time.Location) time.Time {
	t := time.Date(year, month, day, hour, minute, 0, 0, loc)
	asked := time.Date(year, month, day, hour, minute, 0, 0, time.UTC)
	if shown := wallClock(t); !shown.Equal(asked) {
		// In a gap: time.Date moved the time by the jump, back into the
		// zone before it (west of Greenwich) or on into the one after
		// (east). Either zone's bound is the jump.
		start, end := t.ZoneBounds()
		if shown.Before(asked) && !end.IsZero() {
			return end
		}
		if shown.After(asked) && !start.IsZero() {
			return start
		}
		return t
	}
	// Shown twice? The same clock time an offset change earlier.
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, offNow := t.Zone()
	_, offBefore := start.Add(-time.Second).Zone()
	if offBefore > offNow {
		if earlier := t.Add(-time.Duration(offBefore-offNow) * time.Second); earlier.Before(start) {
			if e := earlier.In(loc); e.Hour() == hour && e.Minute() == minute {
				return earlier
			}
		}
	}
	return t
}
