package device_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/host/services"
)

// speaker stands for the conversation's player: it counts the cues (the
// ring sound) it is given. tell stands for the link.
type speaker struct {
	mu    sync.Mutex
	cues  int
	up    bool
	told  []string
	sound []int16
}

func (s *speaker) cue(p []int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cues++
	s.sound = p
}

func (s *speaker) tell(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		return errors.New("not connected")
	}
	s.told = append(s.told, text)
	return nil
}

func (s *speaker) state() (cues int, told []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cues, append([]string(nil), s.told...)
}

func runDevice(d *device.Device) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx, func() {}); close(done) }()
	return func() { cancel(); <-done }
}

// TestARingingTimerIsHeardOnAMutedSpeaker: a timer rings with the chime,
// over and over, at the ring floor although the speaker is muted and low,
// until it is stopped; the server, which was away, is told when the link
// comes up; the hooks see it ring and stop.
func TestARingingTimerIsHeardOnAMutedSpeaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &events{}
		sp := &speaker{}
		d := newDevice(t, device.Options{StateDir: t.TempDir(), Volume: 10, RingFloor: 60, RingTimeout: time.Hour,
			Hook: ev.hook, Cue: sp.cue, Tell: sp.tell, TellServer: true})
		stop := runDevice(d)
		defer stop()
		d.MuteSpeaker(true)
		disp := dispatcher(t, d)
		if out := call(disp, services.CallerVoiceServer, "set_timer", `{"seconds":120,"label":"tea"}`); !out.Success {
			t.Fatal(out.Error)
		}
		time.Sleep(119 * time.Second)
		synctest.Wait()
		if cues, _ := sp.state(); cues != 0 || d.Ringing() {
			t.Fatal("rang early")
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		cues, told := sp.state()
		if !d.Ringing() || cues < 5 {
			t.Fatalf("ringing %v, %d cues in 10 s", d.Ringing(), cues)
		}
		if g := d.Gain(); g != device.Curve(60, device.DefaultRange) {
			t.Fatalf("rings at gain %g, want the floor's %g", g, device.Curve(60, device.DefaultRange))
		}
		if len(told) != 0 {
			t.Fatalf("told a server that is away: %q", told)
		}
		sp.mu.Lock()
		sp.up = true
		sp.mu.Unlock()
		d.LinkUp()
		if _, told = sp.state(); len(told) != 1 || !strings.Contains(told[0], `The timer "tea" (2 minutes) has gone off`) {
			t.Fatalf("told %q", told)
		}
		out := call(disp, services.CallerVoiceServer, "stop_ringing", `{}`)
		if !out.Success || out.Data["message"] != `stopped the timer "tea"` || d.Ringing() {
			t.Fatalf("stop_ringing: %+v", out)
		}
		if d.Gain() != 0 {
			t.Fatalf("after the ringing the muted speaker has gain %g", d.Gain())
		}
		for _, l := range []device.TimerList{d.TimersList(), {Recent: d.Status().Recent}} {
			if len(l.Recent) != 1 || l.Recent[0].State != "stopped" || l.Recent[0].StoppedBy != "the voice server (stop_ringing)" || l.Recent[0].StoppedAt == "" {
				t.Fatalf("recent after stop_ringing: %+v", l.Recent)
			}
		}
		cues, _ = sp.state()
		time.Sleep(time.Minute)
		synctest.Wait()
		if c, _ := sp.state(); c != cues {
			t.Fatalf("%d more cues after it stopped", c-cues)
		}
		want := "mute DEVICE=speaker MUTED=true\ntimer ID=1 LABEL=tea STATE=ringing\ntimer ID=1 LABEL=tea STATE=stopped"
		if got := ev.all(); got != want {
			t.Errorf("hooks:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestRingingStopsAfterTheTimeout: unstopped, the ringing ends after
// RingTimeout; a second timer that rings meanwhile gives it its full time
// again.
func TestRingingStopsAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &speaker{}
		d := newDevice(t, device.Options{RingTimeout: 5 * time.Minute, Cue: sp.cue})
		stop := runDevice(d)
		defer stop()
		disp := dispatcher(t, d)
		call(disp, services.CallerOwner, "set_timer", `{"seconds":60}`)
		call(disp, services.CallerOwner, "set_timer", `{"seconds":240}`)
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if !d.Ringing() {
			t.Fatal("not ringing")
		}
		time.Sleep(7 * time.Minute) // the second rang at 4 minutes: 5 more from there
		synctest.Wait()
		if !d.Ringing() {
			t.Fatal("the second timer did not renew the ringing")
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if d.Ringing() {
			t.Fatal("still ringing after the timeout")
		}
		// Both are shown as a person would say: stopped, when, and by what.
		st := d.Status()
		if len(st.Recent) != 2 {
			t.Fatalf("recent: %+v", st.Recent)
		}
		for _, ev := range st.Recent {
			if ev.State != "stopped" || ev.StoppedAt == "" || !strings.Contains(ev.StoppedBy, "rang for 5 minutes") {
				t.Fatalf("recent after the timeout: %+v", st.Recent)
			}
		}
	})
}

// TestMissedTimersAreToldNotRung: a timer that came due long before the
// device started is reported (hook, server) and does not ring.
func TestMissedTimersAreToldNotRung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		d := newDevice(t, device.Options{StateDir: dir})
		dispatcher(t, d)
		call(dispatcher(t, d), services.CallerOwner, "set_timer", `{"seconds":60,"label":"eggs"}`)
		time.Sleep(time.Hour) // the daemon is down all this time
		ev := &events{}
		sp := &speaker{up: true}
		d2 := newDevice(t, device.Options{StateDir: dir, Grace: 10 * time.Minute, Hook: ev.hook, Cue: sp.cue, Tell: sp.tell, TellServer: true})
		stop := runDevice(d2)
		defer stop()
		synctest.Wait()
		cues, told := sp.state()
		if d2.Ringing() || cues != 0 {
			t.Fatal("a missed timer rang")
		}
		if len(told) != 1 || !strings.Contains(told[0], `The timer "eggs" came due at`) || !strings.Contains(told[0], "it did not ring") {
			t.Fatalf("told %q", told)
		}
		if got := ev.all(); got != "timer ID=1 LABEL=eggs STATE=missed" {
			t.Fatalf("hooks %q", got)
		}
	})
}

// TestNoChimeIsQueuedAfterTheRingStops: a chime the ringing was about to
// queue when the owner stopped it is queued before StopRinging returns, or
// not at all, so that the conversation's drop of the queued chimes
// (RingStopped, right after) finds it. The ring's Cue is held at its
// second chime to hold the ringing goroutine between its tick and its cue.
func TestNoChimeIsQueuedAfterTheRingStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		var stopped atomic.Bool
		entered, release := make(chan struct{}), make(chan struct{})
		var late atomic.Int32 // chimes queued after StopRinging returned
		cue := func([]int16) {
			if calls.Add(1) == 2 {
				close(entered)
				<-release
			}
			if stopped.Load() {
				late.Add(1)
			}
		}
		d := newDevice(t, device.Options{Cue: cue})
		stop := runDevice(d)
		defer stop()
		call(dispatcher(t, d), services.CallerOwner, "set_timer", `{"seconds":1}`)
		<-entered // the second chime is on its way to the speaker
		done := make(chan struct{})
		go func() {
			d.StopRinging("the owner")
			stopped.Store(true)
			close(done)
		}()
		synctest.Wait() // StopRinging returned, or waits for the chime on its way
		close(release)
		<-done
		synctest.Wait()
		if n := late.Load(); n != 0 {
			t.Fatalf("%d chimes queued after StopRinging returned: the owner's stop cannot drop them", n)
		}
	})
}

// TestARingIsHandedOnAndAPeersRingIsBounded: a timer that rings here is
// handed to OnRing (the household rings it on its other speakers), a
// missed one is not; a ring on another speaker's word sounds here, shows
// in the status as that speaker's, tells neither the server nor the
// hooks, and ends by the ring's own timeout or by a stop.
func TestARingIsHandedOnAndAPeersRingIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &speaker{up: true}
		var hooks atomic.Int32
		d := newDevice(t, device.Options{RingTimeout: 5 * time.Minute, Cue: sp.cue, TellServer: true, Tell: sp.tell,
			Hook: func(string, map[string]string) { hooks.Add(1) }})
		var handed []string
		d.OnRing(func(e timers.Entry) { handed = append(handed, e.ID+" "+e.Label) })
		stop := runDevice(d)
		defer stop()
		disp := dispatcher(t, d)
		call(disp, services.CallerOwner, "set_timer", `{"seconds":60,"label":"tea"}`)
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if len(handed) != 1 || !strings.HasSuffix(handed[0], " tea") {
			t.Fatalf("handed on: %q, want the tea timer once", handed)
		}
		d.StopRinging("the owner")

		_, toldBefore := sp.state()
		hooksBefore := hooks.Load()
		d.RingFor("kitchen", timers.Entry{ID: "t9", Kind: timers.Timer, Label: "pasta", Due: time.Now()})
		synctest.Wait()
		st := d.Status()
		if !d.Ringing() || len(st.Ringing) != 1 || st.Ringing[0].ID != "kitchen/t9" || st.Ringing[0].Label != "pasta" {
			t.Fatalf("a peer's ring: ringing %v, status %+v", d.Ringing(), st.Ringing)
		}
		if _, told := sp.state(); len(told) != len(toldBefore) || hooks.Load() != hooksBefore {
			t.Errorf("a peer's ring told the server %q or ran a hook (%d → %d): the speaker it was set on does", told[len(toldBefore):], hooksBefore, hooks.Load())
		}
		if len(handed) != 1 {
			t.Errorf("a peer's ring was handed on again: %q", handed)
		}
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		if d.Ringing() {
			t.Fatal("a peer's ring outlived the ring's timeout")
		}
	})
}
