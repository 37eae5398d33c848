package household

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// bus joins arbiters as memberlist would, every message arriving after
// delay (in the bubble's virtual time).
type bus struct {
	delay time.Duration
	arbs  []*Arbiter
}

func (b *bus) add(name string, window time.Duration) *Arbiter {
	var a *Arbiter
	a = NewArbiter(name, window, BySNR, func() int { return len(b.arbs) - 1 }, func(msg []byte) {
		for _, o := range b.arbs {
			if o != a {
				o := o
				time.AfterFunc(b.delay, func() { o.Receive(msg) })
			}
		}
	})
	b.arbs = append(b.arbs, a)
	return a
}

func TestTheBestClaimAnswersAndTheOthersStandDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: 2 * time.Millisecond}
		window := 150 * time.Millisecond
		kitchen, hall, study := b.add("kitchen", window), b.add("hall", window), b.add("study", window)
		// The hall hears it best but detects last, 40 ms after the kitchen.
		claims := []struct {
			a     *Arbiter
			after time.Duration
			snr   float32
		}{{kitchen, 0, 12}, {study, 20 * time.Millisecond, 6}, {hall, 40 * time.Millisecond, 21}}
		got := map[string]Decision{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range claims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(c.after)
				d := c.a.Decide(Claim{Score: 0.9, SNR: c.snr})
				mu.Lock()
				got[c.a.self] = d
				mu.Unlock()
			}()
		}
		wg.Wait()
		wins := 0
		for name, d := range got {
			if d.Winner != "hall" {
				t.Errorf("%s: the winner is %s (%s), want hall", name, d.Winner, d.Why)
			}
			if d.Win {
				wins++
			}
			if d.Waited > window {
				t.Errorf("%s waited %v, more than the window", name, d.Waited)
			}
		}
		if wins != 1 || len(got) != 3 {
			t.Errorf("%d of %d speakers answered, want exactly one", wins, len(got))
		}
		// The last to detect has every claim already: it decides at once;
		// the first waits for the last claim, not the whole window.
		if d := got["hall"]; d.Waited != 0 {
			t.Errorf("the hall, last to claim, waited %v; want no wait", d.Waited)
		}
		if d := got["kitchen"]; d.Waited != 42*time.Millisecond {
			t.Errorf("the kitchen waited %v; want 42 ms (until the hall's claim arrived)", d.Waited)
		}
		if s := study.Stats(); s.StoodDown != 1 || s.Answered != 0 {
			t.Errorf("study's stats %+v", s)
		}
	})
}

func TestALoneSpeakerAnswersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{}
		a := b.add("kitchen", 150*time.Millisecond)
		d := a.Decide(Claim{Score: 0.5, SNR: 3})
		if !d.Win || d.Waited != 0 {
			t.Errorf("alone: %+v, want a win without a wait", d)
		}
	})
}

// A peer that is a member but does not hear the phrase (another floor)
// costs the window, no more.
func TestASilentPeerCostsTheWindowAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: time.Millisecond}
		a := b.add("kitchen", 120*time.Millisecond)
		b.add("attic", 120*time.Millisecond)
		d := a.Decide(Claim{Score: 0.7, SNR: 9})
		if !d.Win || d.Waited != 120*time.Millisecond {
			t.Errorf("%+v, want a win after the 120 ms window", d)
		}
	})
}

// A speaker that detects after another has decided (later than the
// window) stands down even if it hears the phrase better: the answer has
// begun.
func TestALateDetectorStandsDownForTheOneThatAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: time.Millisecond}
		far, near := b.add("far", 100*time.Millisecond), b.add("near", 100*time.Millisecond)
		decided := make(chan Decision)
		go func() { decided <- far.Decide(Claim{Score: 0.6, SNR: 5}) }()
		first := <-decided
		time.Sleep(200 * time.Millisecond)
		late := near.Decide(Claim{Score: 0.99, SNR: 30})
		if !first.Win || late.Win || late.Winner != "far" {
			t.Errorf("first %+v, late %+v; want far to answer alone", first, late)
		}
	})
}

func TestPriorityWinsOverEveryMeasure(t *testing.T) {
	for _, m := range Measures {
		hi := Claim{Speaker: "b", Priority: 1, Score: 0.1, SNR: 1, Level: -60}
		lo := Claim{Speaker: "a", Score: 1, SNR: 40, Level: -10}
		if !m.Better(hi, lo) || m.Better(lo, hi) {
			t.Errorf("%s: the pinned speaker does not win", m)
		}
	}
}

func TestReceiveKeepsABoundedListAndDropsStrangeMessages(t *testing.T) {
	a := NewArbiter("me", time.Millisecond, BySNR, func() int { return 0 }, func([]byte) {})
	for i := range 1000 {
		a.Receive(encode(message{Kind: "claim", Claim: Claim{Speaker: string(rune('a' + i%26))}}))
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte(`{"k":"claim"}`), []byte(`{"k":"unmute","c":{"s":"x"}}`), make([]byte, 5000)} {
		a.Receive(bad)
	}
	if len(a.heard) > maxHeard {
		t.Errorf("%d claims kept, more than %d", len(a.heard), maxHeard)
	}
}

// hearing makes a into a speaker that measures others' claims: snr is
// what it heard; won counts its answers.
func hearing(a *Arbiter, snr float32, busy bool, won *int, mu *sync.Mutex) {
	a.Hear = func(time.Duration) Claim { return Claim{SNR: snr, Busy: busy} }
	a.Settled = func(_ Claim, d Decision) {
		if d.Win {
			mu.Lock()
			*won++
			mu.Unlock()
		}
	}
}

// TestASpeakerThatMeasuredAndLostIsTold: a speaker that measured another's
// claim and heard it worse is told it stands down (its log says so), as
// one whose own detector fired is.
func TestASpeakerThatMeasuredAndLostIsTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: time.Millisecond}
		near, far := b.add("near", 150*time.Millisecond), b.add("far", 150*time.Millisecond)
		var told []Decision
		far.Hear = func(time.Duration) Claim { return Claim{SNR: 3} }
		far.Settled = func(_ Claim, d Decision) { told = append(told, d) }
		near.Decide(Claim{Score: 0.9, SNR: 30})
		synctest.Wait()
		if len(told) != 1 || told[0].Win || told[0].Winner != "near" {
			t.Errorf("far was told %+v; want one decision: near answers", told)
		}
	})
}

// TestTheSpeakerThatHeardBestAnswersThoughItsDetectorDidNotFire: only the
// far speaker's detector fires; the near one measures the phrase on its
// claim, heard it best and answers; the far one stands down; they settle
// within the LAN's round trip, not the window.
func TestTheSpeakerThatHeardBestAnswersThoughItsDetectorDidNotFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: 5 * time.Millisecond}
		far, near, other := b.add("far", 150*time.Millisecond), b.add("near", 150*time.Millisecond), b.add("other", 150*time.Millisecond)
		var mu sync.Mutex
		var farWon, nearWon, otherWon int
		hearing(far, 8, false, &farWon, &mu)
		hearing(near, 25, false, &nearWon, &mu)
		hearing(other, 3, false, &otherWon, &mu)
		d := far.Decide(Claim{Score: 0.7, SNR: 8})
		synctest.Wait()
		if d.Win || d.Winner != "near" || nearWon != 1 || farWon+otherWon != 0 {
			t.Errorf("far: %+v; answers: near %d, far %d, other %d; want near alone", d, nearWon, farWon, otherWon)
		}
		if d.Waited != 10*time.Millisecond {
			t.Errorf("far waited %v; want the round trip, 10 ms", d.Waited)
		}
		// near's own detector fires late: the phrase is claimed already.
		if again := near.Decide(Claim{Score: 0.9, SNR: 25}); !again.Repeat {
			t.Errorf("a late detection of a measured phrase: %+v, want a repeat", again)
		}
	})
}

// TestABusySpeakerNeverAnswersAndCostsNoWait: a speaker in a turn (or
// muted) says it is busy; the others need not wait for it, and it never
// answers.
func TestABusySpeakerNeverAnswersAndCostsNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: time.Millisecond}
		a, busy := b.add("a", 150*time.Millisecond), b.add("busy", 150*time.Millisecond)
		var mu sync.Mutex
		var won int
		hearing(busy, 40, true, &won, &mu)
		d := a.Decide(Claim{SNR: 2, Priority: -5})
		synctest.Wait()
		if !d.Win || won != 0 || d.Waited != 2*time.Millisecond {
			t.Errorf("%+v, busy answered %d; want a to answer after the 2 ms round trip", d, won)
		}
		if s := busy.Stats(); s.StoodDown != 0 || s.Answered != 0 {
			t.Errorf("the busy speaker counted %+v; a busy speaker's decision is not counted", s)
		}
	})
}

// TestADetectorThatLagsFindsThePhraseSettled: a speaker's detector fires
// two seconds after the phrase ended (a busy machine), long after the
// household settled it. Its claim is of the same phrase (its age says so),
// so it neither claims it again (it measured it on the first claim) nor
// makes the others answer it a second time.
func TestADetectorThatLagsFindsThePhraseSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: 5 * time.Millisecond}
		near, far, slow := b.add("near", 150*time.Millisecond), b.add("far", 150*time.Millisecond), b.add("slow", 150*time.Millisecond)
		var mu sync.Mutex
		var nearWon, farWon, slowWon int
		hearing(near, 30, false, &nearWon, &mu)
		hearing(far, 5, false, &farWon, &mu)
		hearing(slow, 10, false, &slowWon, &mu)
		d := far.Decide(Claim{Score: 0.6, SNR: 5, Age: 200 * time.Millisecond})
		synctest.Wait()
		time.Sleep(2 * time.Second)
		late := slow.Decide(Claim{Score: 0.9, SNR: 10, Age: 2200 * time.Millisecond})
		synctest.Wait()
		if d.Win || nearWon != 1 || farWon+slowWon != 0 || !late.Repeat {
			t.Errorf("far %+v, slow's late detection %+v; answers near %d far %d slow %d: want near alone, once", d, late, nearWon, farWon, slowWon)
		}
	})
}

// TestABlindSpeakerThatLagsStandsDown: one that does not measure others'
// claims (its own detector alone) and fires late sees the answer to the
// same phrase and stays silent.
func TestABlindSpeakerThatLagsStandsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bus{delay: 5 * time.Millisecond}
		first, blind := b.add("first", 150*time.Millisecond), b.add("blind", 150*time.Millisecond)
		d := first.Decide(Claim{Score: 0.6, SNR: 5, Age: 200 * time.Millisecond})
		time.Sleep(2 * time.Second)
		late := blind.Decide(Claim{Score: 0.9, SNR: 30, Age: 2200 * time.Millisecond})
		if !d.Win || late.Win || late.Winner != "first" {
			t.Errorf("first %+v, the late blind one %+v: want first alone", d, late)
		}
	})
}

// FuzzReceive: whatever a member sends, the arbiter neither panics nor
// keeps more than maxHeard claims.
func FuzzReceive(f *testing.F) {
	f.Add(encode(message{Kind: "claim", Claim: Claim{Speaker: "a", Level: -30, Age: time.Second}}))
	f.Add(encode(message{Kind: "answer", Claim: Claim{Speaker: "b", Age: -time.Hour}}))
	f.Add([]byte(`{"k":"claim","c":{"s":"x","a":9223372036854775807}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a := NewArbiter("me", time.Millisecond, ByLevel, func() int { return 1 }, func([]byte) {})
		a.Hear = func(time.Duration) Claim { return Claim{} }
		for range 3 {
			a.Receive(b)
		}
		a.mu.Lock()
		n := len(a.heard)
		a.mu.Unlock()
		if n > maxHeard {
			t.Fatalf("%d claims kept", n)
		}
	})
}
