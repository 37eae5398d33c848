package conversation

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
)

// followRig is a wake-word conversation (push-to-talk mode, a 3 s
// follow-up window) whose microphone is silent until loud is called: then
// the room speaks without pause. It runs in a synctest bubble, so the
// microphone, the speaker and every window run on the bubble's clock.
type followRig struct {
	*wakeRig
	fed      atomic.Int64
	loudFrom atomic.Int64
}

func newFollowRig(t *testing.T, o Options) *followRig {
	t.Helper()
	r := &followRig{}
	r.loudFrom.Store(1 << 40)
	if o.Mode == "" {
		o.Mode = "manual"
	}
	if o.Wake == nil {
		o.Wake = &WakeOptions{FollowUp: 3 * time.Second}
	}
	r.wakeRig = newWakeRig(t, o, func(i int64) bool { return i >= r.loudFrom.Load() }, &r.fed)
	r.c.LinkUp()
	return r
}

// loud makes the room speak from the microphone's next sample on.
func (r *followRig) loud() { r.loudFrom.Store(r.mic.read()) }

// answer has the server answer task with 300 ms of reply and END.
func (r *followRig) answer(task string) {
	for i := range 5 {
		r.c.Frame(reply(task, i+1, 60*time.Millisecond))
	}
	r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 6})
}

// streamedSince counts the AUDIO frames sent from the n-th frame on, on
// tasks other than skip.
func (r *followRig) streamedSince(n int, skip string) int {
	var k int
	for _, f := range audioFrames(r.out.all()[n:]) {
		if f.Task != skip {
			k++
		}
	}
	return k
}

// TestOnlyTheOwnersTurnsOpenTheFollowUpWindow: with a follow-up window,
// speech after the reply to a turn the owner started (the wake word, the
// talk button, a `say`) starts a turn without the wake word; a reply the
// server pushed unasked, or a bare END_FRAME on a task of its own, never
// opens the microphone.
func TestOnlyTheOwnersTurnsOpenTheFollowUpWindow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner bool
		turn  func(t *testing.T, r *followRig) string // starts the turn; returns the task the server answers
	}{
		{"the wake word", true, func(t *testing.T, r *followRig) string {
			n := len(r.out.all())
			r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: r.fed.Load()})
			// Nothing is said after the phrase: the turn ends by itself.
			eventually(t, "the wake turn's END", func() bool {
				for _, f := range r.out.all()[n:] {
					if f.Type == voice.TypeEnd {
						return true
					}
				}
				return false
			})
			return r.out.all()[n].Task
		}},
		{"the talk button", true, func(t *testing.T, r *followRig) string {
			task, err := r.c.TalkStart()
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if _, err := r.c.TalkStop(); err != nil {
				t.Fatal(err)
			}
			return task
		}},
		{"a say from the owner", true, func(t *testing.T, r *followRig) string {
			task, _, err := r.c.Say("what time is it")
			if err != nil {
				t.Fatal(err)
			}
			return task
		}},
		{"the speaker's notice", false, func(t *testing.T, r *followRig) string {
			task, err := r.c.Notify("[speaker notice] The timer has gone off and is ringing.")
			if err != nil {
				t.Fatal(err)
			}
			return task
		}},
		{"a reply the server pushed", false, func(*testing.T, *followRig) string { return "say1" }},
		{"a bare END_FRAME", false, func(t *testing.T, r *followRig) string {
			r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: "x9"})
			return "" // nothing more
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newFollowRig(t, Options{})
				task := tc.turn(t, r)
				if task != "" {
					r.answer(task)
				}
				time.Sleep(time.Second) // the reply plays out
				synctest.Wait()
				n := len(r.out.all())
				r.loud()
				time.Sleep(2 * time.Second) // within the window
				synctest.Wait()
				got := r.streamedSince(n, task)
				switch {
				case tc.owner && got == 0:
					t.Fatalf("after the reply to %s, speech in the window started no turn", tc.name)
				case !tc.owner && got != 0:
					t.Fatalf("after %s, %d AUDIO frames of room speech were sent without the wake word", tc.name, got)
				}
				t.Logf("%d AUDIO frames sent in the 2 s after the reply", got)
			})
		})
	}
}

// TestAMuteEndsTheWakeTurn: a wake turn open when the microphone is muted
// ends with the mute (END in push-to-talk mode, a LISTEN stop in the VAD
// modes); after the unmute the room's speech is not sent before a new
// trigger.
func TestAMuteEndsTheWakeTurn(t *testing.T) {
	for _, mode := range []string{"manual", "vad"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var muted atomic.Bool
				r := newFollowRig(t, Options{Mode: mode, Wake: &WakeOptions{}, MicMuted: muted.Load})
				r.loud() // the room speaks throughout: the turn cannot end by itself
				time.Sleep(time.Second)
				r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: r.fed.Load()})
				time.Sleep(time.Second)
				synctest.Wait()
				fs := r.out.all()
				if len(audioFrames(fs)) == 0 {
					t.Fatal("the wake turn streamed nothing")
				}
				task := fs[0].Task
				muted.Store(true)
				time.Sleep(2 * time.Second)
				synctest.Wait()
				ended := false
				for _, f := range r.out.all()[len(fs):] {
					if f.Task == task && (f.Type == voice.TypeEnd || f.Type == voice.TypeListen && listenOf(t, f).State == voice.ListenStop) {
						ended = true
					}
				}
				if !ended {
					t.Errorf("the mute did not end the wake turn")
				}
				n := len(r.out.all())
				muted.Store(false)
				time.Sleep(3 * time.Second)
				synctest.Wait()
				if got := len(audioFrames(r.out.all()[n:])); got != 0 {
					t.Fatalf("%d AUDIO frames of room speech sent after the unmute with no new trigger, want 0", got)
				}
			})
		})
	}
}

// TestAMuteEndsAPushToTalkTurn: a push-to-talk turn held open when the
// microphone is muted ends with END; the unmute sends nothing.
func TestAMuteEndsAPushToTalkTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var muted atomic.Bool
		mic := &counter{loud: func(int64) bool { return true }}
		r := newRig(t, Options{Mode: "manual", MicMuted: muted.Load,
			OpenSource: func(context.Context) (audio.Source, error) { return audio.Paced(mic, 16000), nil }})
		r.c.LinkUp()
		task, err := r.c.TalkStart()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		muted.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		fs := r.out.all()
		if last := fs[len(fs)-1]; last.Type != voice.TypeEnd || last.Task != task {
			t.Fatalf("after the mute the last frame is %v, want the turn's END", last)
		}
		muted.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := len(r.out.all()) - len(fs); got != 0 {
			t.Fatalf("%d frames sent after the unmute, want 0", got)
		}
	})
}

// TestAHushedNoticeIsNotPlayed: the server's answer to the speaker's
// notice, held back while a ring's chime plays, is not played once
// RingStopped is called (the owner stopped the ring), nor are its late
// frames; the speaker is free for the next reply.
func TestAHushedNoticeIsNotPlayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{Mode: "manual"})
		r.c.LinkUp()
		r.c.Cue(audiotest.Tone(1175, 16000, 2*time.Second)) // the chime
		task, err := r.c.Notify("[speaker notice] The timer has gone off and is ringing.")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			r.c.Frame(reply(task, i+1, 60*time.Millisecond))
		}
		time.Sleep(time.Second)
		r.c.RingStopped()
		r.c.Frame(reply(task, 11, 60*time.Millisecond)) // late
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 12})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		n := r.sink.count()
		if got := tones(r.sink.since(0), 880); got != 0 {
			t.Fatalf("%d writes of the hushed answer played", got)
		}
		r.c.Frame(reply("say2", 1, 300*time.Millisecond)) // a reply the server pushes next
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: "say2", Seq: 2})
		time.Sleep(time.Second)
		synctest.Wait()
		if got := tones(r.sink.since(n), 880); got == 0 {
			t.Fatal("the next reply did not play after the hushed one")
		}
	})
}

// tones counts the loud writes whose peak is at hz.
func tones(ws [][]int16, hz float64) int {
	var n int
	for _, w := range ws {
		if f := audiotest.PeakFrequency(w, 16000, 200, 2000, 10); loud(w) && f > hz-20 && f < hz+20 {
			n++
		}
	}
	return n
}

// TestTheReplyToAMutedTurnOpensNoWindow: the reply to a turn the mute
// ended, ending after the unmute, opens no follow-up window: after the
// unmute nothing is sent before a new trigger.
func TestTheReplyToAMutedTurnOpensNoWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var muted atomic.Bool
		r := newFollowRig(t, Options{MicMuted: muted.Load})
		r.loud()
		time.Sleep(time.Second)
		r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: r.fed.Load()})
		time.Sleep(time.Second)
		synctest.Wait()
		task := r.out.all()[0].Task
		muted.Store(true)
		time.Sleep(time.Second)
		muted.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		n := len(r.out.all())
		r.answer(task) // the server answers what it got before the mute
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := r.streamedSince(n, task); got != 0 {
			t.Fatalf("%d AUDIO frames of the room sent after the reply to the turn the mute ended, want 0", got)
		}
	})
}

// TestANoticeDoesNotTakeTheOwnersTurn: a timer's notice sent while the
// owner's turn awaits its reply does not take the speaker: the owner's
// reply plays, and the notice's answer does not cut in.
func TestANoticeDoesNotTakeTheOwnersTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{Mode: "manual"})
		r.c.LinkUp()
		task, err := r.c.TalkStart()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if _, err := r.c.TalkStop(); err != nil {
			t.Fatal(err)
		}
		notice, err := r.c.Notify("[speaker notice] The timer has gone off and is ringing.")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 { // the notice's answer comes first, then the owner's
			r.c.Frame(voice.Frame{Type: voice.TypeAudio, Task: notice, Seq: i + 1, Payload: audiotest.SamplesToBytes(audiotest.Tone(440, 16000, 60*time.Millisecond))})
		}
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: notice, Seq: 11})
		for i := range 10 {
			r.c.Frame(reply(task, i+1, 60*time.Millisecond))
		}
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 11})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		owner, other := tones(r.sink.since(0), 880), tones(r.sink.since(0), 440)
		if owner < 9 || other != 0 {
			t.Fatalf("%d writes of the owner's reply and %d of the notice's answer played; want the owner's whole (10) and none of the notice's", owner, other)
		}
	})
}

// TestTheChimeStopsWithTheRing: when the owner stops the ring, the chimes
// queued behind the one under way are not played (they would talk over
// the owner too); the one under way finishes.
func TestTheChimeStopsWithTheRing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{Mode: "manual"})
		r.c.LinkUp()
		for range 3 { // the chime under way, and two queued behind it
			r.c.Cue(audiotest.Tone(1175, 16000, 2*time.Second))
		}
		time.Sleep(300 * time.Millisecond)
		r.c.RingStopped() // the owner stopped the ring
		time.Sleep(7 * time.Second)
		synctest.Wait()
		var played int
		for _, w := range r.sink.since(0) {
			played += len(w)
		}
		if played > 2*16000 {
			t.Fatalf("%d ms of chime played; want the one under way at the stop (2000 ms), none queued after it", played/16)
		}
	})
}

// TestASayThatWasNotSentLeavesTheNoticesHeard: the owner's say that could
// not be sent (the link went down between the check and the send) is no
// turn under way: the speaker's next notice is answered aloud, not set
// aside for a reply that will never come.
func TestASayThatWasNotSentLeavesTheNoticesHeard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{Mode: "manual"})
		r.c.LinkUp()
		r.out.setDown(true)
		if _, _, err := r.c.Say("what time is it"); err == nil {
			t.Fatal("a say over a link that is down did not fail")
		}
		r.out.setDown(false)
		time.Sleep(time.Second) // the failure's earcon plays out
		synctest.Wait()
		n := r.sink.count()
		task, err := r.c.Notify("[speaker notice] The timer has gone off and is ringing.")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			r.c.Frame(reply(task, i+1, 60*time.Millisecond))
		}
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 11})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := tones(r.sink.since(n), 880); got < 9 {
			t.Fatalf("%d writes of the notice's answer played after a say that was not sent, want the whole (10)", got)
		}
	})
}
