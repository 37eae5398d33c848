package conversation

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/proto/voice"
)

// TestATurnDucksTheMediaAndItsReplyBringsItBack: on the speaker's mixer,
// music plays loud until a turn starts, stays ducked while the reply
// plays (through a Voice stream of the same mixer), and comes back once the
// reply has played out.
func TestATurnDucksTheMediaAndItsReplyBringsItBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot := mixer.NewSlot(16000)
		m := mixer.New(slot, mixer.Options{Rate: 16000})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		r := newRig(t, Options{Mode: "manual", Output: m, Attach: func(s audio.Sink) { slot.Set(s) }})
		r.c.LinkUp()
		music, err := m.Open("radio", mixer.Media, audio.Format{Rate: 44100, Channels: 2})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			chunk := make([]int16, 2*4410)
			for {
				if _, err := music.Write(chunk); err != nil {
					return
				}
			}
		}()
		defer music.Stop()
		ducked := func() (bool, bool) {
			for _, s := range m.Status() {
				if s.Name == "radio" {
					return s.Ducked, true
				}
			}
			return false, false
		}
		time.Sleep(500 * time.Millisecond)
		if d, ok := ducked(); !ok || d {
			t.Fatalf("before the turn: radio open %v, ducked %v", ok, d)
		}
		task, err := r.c.TalkStart()
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := ducked(); !d {
			t.Fatal("the media is not ducked while the turn listens")
		}
		time.Sleep(500 * time.Millisecond)
		r.c.TalkStop()
		for i := range 10 {
			r.c.Frame(reply(task, i+1, 60*time.Millisecond))
		}
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 11})
		time.Sleep(300 * time.Millisecond)
		var voiceOpen bool
		for _, s := range m.Status() {
			voiceOpen = voiceOpen || s.Class == "voice"
		}
		if d, _ := ducked(); !d || !voiceOpen {
			t.Fatalf("while the reply plays: media ducked %v, a voice stream open %v", d, voiceOpen)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if d, _ := ducked(); d || m.Active() {
			t.Fatal("the media is still ducked after the reply played out")
		}
		if got := tones(r.sink.since(0), 880); got < 9 {
			t.Fatalf("%d writes of the reply reached the speaker", got)
		}
	})
}
