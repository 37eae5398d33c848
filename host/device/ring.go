package device

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/device/timers"
)

// Event is something a timer or alarm did, for the status.
type Event struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Label string `json:"label,omitempty"`
	State string `json:"state"` // ringing, stopped, missed
	Due   string `json:"due"`
	// StoppedAt and StoppedBy: when a ringing one stopped, and who or what
	// stopped it (the owner, the voice server, its timeout).
	StoppedAt string    `json:"stopped_at,omitempty"`
	StoppedBy string    `json:"stopped_by,omitempty"`
	At        time.Time `json:"-"`
}

// fired is the scheduler's callback: an entry came due.
func (d *Device) fired(f timers.Fired) {
	e := f.Entry
	due := e.Due.In(d.sched.Location())
	state := "ringing"
	if f.Missed {
		state = "missed"
	}
	d.record(e, state)
	fields := map[string]string{"ID": e.ID, "LABEL": e.Label, "STATE": state, "DUE": due.Format(time.RFC3339)}
	name := nameOf(e)
	switch {
	case f.Missed:
		d.log.Warn("a "+string(e.Kind)+" came due while the speaker was off, longer ago than the grace, and did not ring",
			"id", e.ID, "due", due.Format(time.DateTime), "late", f.Late.Round(time.Second))
		d.hook(string(e.Kind), fields)
		d.notify(fmt.Sprintf("%s came due at %s while the speaker was off; it did not ring.", capital(name), due.Format("15:04")))
		return
	case f.Late > time.Minute:
		d.log.Info("a "+string(e.Kind)+" came due while the speaker was off; it rings now", "id", e.ID, "due", due.Format(time.DateTime), "late", f.Late.Round(time.Second))
		d.notify(fmt.Sprintf("%s came due at %s while the speaker was off; it is ringing now.", capital(name), due.Format("15:04")))
	default:
		d.log.Info(string(e.Kind)+" ringing", "id", e.ID)
		switch {
		case e.Label == "" && e.Kind == timers.Timer:
			d.notify(capital(name) + " has gone off and is ringing.")
		case e.Label == "":
			d.notify(capital(name) + " is ringing.")
		case e.Kind == timers.Timer:
			d.notify(fmt.Sprintf("%s (%s) has gone off and is ringing.", capital(name), Human(time.Duration(e.Seconds)*time.Second)))
		default:
			d.notify(fmt.Sprintf("%s (%s) is ringing.", capital(name), e.At))
		}
	}
	d.startRinging(e)
	d.hook(string(e.Kind), fields)
	if f := d.onRing.Load(); f != nil {
		(*f)(e)
	}
}

// record shows e under Recent as state.
func (d *Device) record(e timers.Entry, state string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recent = append(d.recent, Event{ID: e.ID, Kind: string(e.Kind), Label: e.Label, State: state,
		Due: e.Due.In(d.sched.Location()).Format("2006-01-02 15:04:05"), At: d.o.Now()})
	if len(d.recent) > maxRecent {
		d.recent = d.recent[len(d.recent)-maxRecent:]
	}
}

// OnRing hands every timer or alarm that starts ringing here (not one
// missed) to f: the household rings it on its other speakers.
func (d *Device) OnRing(f func(timers.Entry)) { d.onRing.Store(&f) }

// RingFor rings e here on the word of another speaker of the household
// (by), as its own ring sounds, for at most the ring's timeout: no
// notice to the voice server, no hook (the speaker it was set on tells
// them).
func (d *Device) RingFor(by string, e timers.Entry) {
	e.ID = by + "/" + e.ID
	d.record(e, "ringing")
	d.log.Info("a "+string(e.Kind)+" of another speaker of the household rings here too", "speaker", by, "id", e.ID)
	d.startRinging(e)
}

// startRinging adds e to what rings, and starts the ringing (or gives it
// its full time again).
func (d *Device) startRinging(e timers.Entry) {
	d.mu.Lock()
	d.ringing = append(d.ringing, e)
	if len(d.ringing) > max(d.o.MaxTimers, 100) {
		d.ringing = d.ringing[1:]
	}
	hw := d.applyLocked()
	if d.ringStop == nil {
		d.ringStop = make(chan struct{})
		d.ringRenew = make(chan struct{}, 1)
		d.ringDone = make(chan struct{})
		go func(stop, renew, done chan struct{}) {
			defer close(done)
			d.ring(stop, renew)
		}(d.ringStop, d.ringRenew, d.ringDone)
	} else {
		select {
		case d.ringRenew <- struct{}{}:
		default:
		}
	}
	d.mu.Unlock()
	d.setMixer(hw)
}

// ring plays the ring sound over and over until stop closes, or for
// RingTimeout after the last entry started ringing.
func (d *Device) ring(stop, renew chan struct{}) {
	sound := d.o.RingSound
	if len(sound) == 0 {
		sound = d.chime
	}
	period := time.Duration(len(sound)) * time.Second / time.Duration(d.o.Rate)
	period = max(period, 500*time.Millisecond)
	deadline := time.NewTimer(d.o.RingTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		if d.o.Cue != nil {
			d.o.Cue(sound)
		}
		select {
		case <-stop:
			return
		case <-renew:
			deadline.Reset(d.o.RingTimeout)
			continue
		case <-deadline.C:
			d.mu.Lock()
			mine := d.ringStop == stop
			d.mu.Unlock()
			if mine {
				d.stopRinging(fmt.Sprintf("no one: it rang for %s, the most it rings (device.ring.timeout)", Human(d.o.RingTimeout)), false)
			}
			return
		case <-tick.C:
		}
	}
}

// Ringing reports whether a timer or alarm is ringing.
func (d *Device) Ringing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ringing) > 0
}

// Stopped is what one stop of the owner's ended: What is "ringing",
// "announcement", "media" or "" (nothing sounded); Names name what it was
// (the timers, or the streams).
type Stopped struct {
	What  string   `json:"what"`
	Names []string `json:"names,omitempty"`
}

// Message says it for a person.
func (s Stopped) Message() string {
	switch {
	case len(s.Names) == 0:
		return "nothing was ringing, and no announcement or music played"
	case s.What == "ringing":
		return "stopped " + strings.Join(s.Names, ", ")
	case s.What == "media":
		return "stopped the music: " + strings.Join(s.Names, ", ")
	}
	return "stopped the " + s.What + ": " + strings.Join(s.Names, ", ")
}

// StoppedRing is the Stopped of a stop that ended the ringing of was.
func StoppedRing(was []timers.Entry) Stopped {
	names := make([]string, len(was))
	for i, e := range was {
		names[i] = nameOf(e)
	}
	return Stopped{What: "ringing", Names: names}
}

// Stop ends the first of what sounds, in the owner's stop order: what
// rings; else (Options.StopSound) the announcements; else the music.
func (d *Device) Stop(why string) Stopped {
	if was := d.StopRinging(why); len(was) > 0 {
		return StoppedRing(was)
	}
	if d.o.StopSound != nil {
		return d.o.StopSound(why)
	}
	return Stopped{}
}

// StopRinging stops what rings and returns it; by (who or what stopped
// it: "the owner (agenthost stop)") is logged, given to the hooks (WHY)
// and shown with each under Recent. It returns once the ringing has queued its last chime,
// so that a caller dropping the queued chimes next drops them all.
func (d *Device) StopRinging(by string) []timers.Entry { return d.stopRinging(by, true) }

// stopRinging is StopRinging; wait: for the ringing goroutine to return
// (false on that goroutine).
func (d *Device) stopRinging(why string, wait bool) []timers.Entry {
	d.mu.Lock()
	was := d.ringing
	d.ringing = nil
	done := d.ringDone
	if d.ringStop != nil {
		close(d.ringStop)
		d.ringStop, d.ringRenew, d.ringDone = nil, nil, nil
	}
	hw := d.applyLocked()
	d.markStoppedLocked(was, why)
	d.mu.Unlock()
	if wait && done != nil {
		<-done
	}
	d.setMixer(hw)
	if len(was) > 0 {
		d.log.Info("ringing stopped", "entries", len(was), "by", why)
	}
	for _, e := range was {
		d.hook(string(e.Kind), map[string]string{"ID": e.ID, "LABEL": e.Label, "STATE": "stopped", "WHY": why})
	}
	return was
}

// markStoppedLocked shows the entries that stopped ringing as stopped, by
// whom and when, under Recent; d.mu held.
func (d *Device) markStoppedLocked(was []timers.Entry, by string) {
	at := d.o.Now().In(d.sched.Location()).Format("2006-01-02 15:04:05")
	for _, e := range was {
		for i := len(d.recent) - 1; i >= 0; i-- {
			if ev := &d.recent[i]; ev.ID == e.ID && ev.State == "ringing" {
				ev.State, ev.StoppedAt, ev.StoppedBy = "stopped", at, by
				break
			}
		}
	}
}

// notify tells the voice server (when TellServer): now when the link is
// up, else when it comes up (LinkUp).
func (d *Device) notify(text string) {
	if !d.o.TellServer || d.o.Tell == nil {
		return
	}
	d.mu.Lock()
	d.notices = append(d.notices, text)
	if len(d.notices) > maxNotices {
		d.notices = d.notices[len(d.notices)-maxNotices:]
	}
	d.mu.Unlock()
	d.LinkUp()
}

// LinkUp sends what the server has not been told yet, as one text turn.
func (d *Device) LinkUp() {
	d.mu.Lock()
	n := d.notices
	d.notices = nil
	d.mu.Unlock()
	if len(n) == 0 || d.o.Tell == nil {
		return
	}
	if err := d.o.Tell("[speaker notice] " + strings.Join(n, " ")); err != nil {
		d.mu.Lock()
		d.notices = append(n, d.notices...)
		if len(d.notices) > maxNotices {
			d.notices = d.notices[len(d.notices)-maxNotices:]
		}
		d.mu.Unlock()
		d.log.Debug("the server will be told about the timer when the link is up", "err", err)
		return
	}
	d.log.Info("told the voice server about timers", "notices", len(n))
}

// Chime is the ring sound made when none is configured: three strokes of a
// bell at 1175 Hz (D6, apart from the simulator's 880 Hz replies), then
// silence, two seconds in all.
func Chime(rate int) []int16 {
	out := make([]int16, 2*rate)
	const hz, amp = 1174.66, 0.9
	for k := range 3 {
		start := k * rate * 2 / 5 // 0.4 s apart
		for i := 0; i < rate*3/10 && start+i < len(out); i++ {
			t := float64(i) / float64(rate)
			env := math.Exp(-t/0.25) * min(1, t/0.005)
			v := amp * env * (math.Sin(2*math.Pi*hz*t) + 0.3*math.Sin(2*math.Pi*2*hz*t)) / 1.3
			out[start+i] = int16(v * math.MaxInt16)
		}
	}
	return out
}

// Human writes a length as people say it: "5 minutes", "1 hour 30 minutes",
// "45 seconds".
func Human(d time.Duration) string {
	d = d.Round(time.Second)
	var parts []string
	unit := func(n int64, one string) {
		if n == 1 {
			parts = append(parts, "1 "+one)
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d %ss", n, one))
		}
	}
	unit(int64(d/(24*time.Hour)), "day")
	unit(int64(d%(24*time.Hour)/time.Hour), "hour")
	unit(int64(d%time.Hour/time.Minute), "minute")
	unit(int64(d%time.Minute/time.Second), "second")
	if len(parts) == 0 {
		return "0 seconds"
	}
	return strings.Join(parts, " ")
}

// nameOf is how an entry is called in what the server is told.
func nameOf(e timers.Entry) string {
	switch {
	case e.Label != "":
		return fmt.Sprintf("the %s %q", e.Kind, e.Label)
	case e.Kind == timers.Timer:
		return "the " + Human(time.Duration(e.Seconds)*time.Second) + " timer"
	}
	return "the " + e.At + " alarm"
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
