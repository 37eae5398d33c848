package capture

import (
	"math"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/echoroom"
)

// pausedScene is the living room (livingScene) with a reply, a long pause
// (the speaker silent, the microphone hearing the room's noise) and the
// same reply again; a, b are where the replies start, n their length.
func pausedScene(t *testing.T) (s echoroom.Signals, far []int16, a, b, n int) {
	sc := livingScene(t)
	n = len(sc.far)
	pause := 10 * rate
	far = append(append(append([]int16(nil), sc.far...), make([]int16, pause)...), sc.far...)
	return sc.room.Render(far, nil), far, 0, n + pause, n
}

// After the far end has been silent for longer than the echo can last, the
// canceller passes the microphone through untouched (a frame late, as its
// suppressor's output always is): nothing it could take off is there.
func TestAQuietRoomPassesThroughTheCanceller(t *testing.T) {
	s, far, _, b, n := pausedScene(t)
	out := cancel(t, s.Mic, far, EchoOptions{MaxDelay: DefaultMaxDelay})
	from, to := n+rate, b // from 1 s after the reply's last sample
	diff := 0
	for i := from; i < to; i++ {
		if out[i] != s.Mic[i-frameLen] {
			diff++
		}
	}
	if diff > 0 {
		t.Fatalf("%d of %d samples of a quiet room (1…10 s after a reply) changed by the canceller, want none", diff, to-from)
	}
}

// A reply after a long pause is cancelled as well as the same reply played
// straight after the first: the filter keeps what it learnt, and no hold
// starts because the speaker paused. (Not against the first reply: the
// suppressor's young model over-estimates the residual for its first
// seconds, which takes more off there than a learnt one does.)
func TestAReplyAfterALongPauseIsCancelledAsBefore(t *testing.T) {
	s, far, _, b, n := pausedScene(t)
	e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := append([]int16(nil), s.Mic...)
	moves := int64(0)
	for i := 0; i+frameLen <= len(out); i += frameLen {
		if i == b {
			if e.held {
				t.Errorf("the canceller holds the output down at the start of a reply after a pause")
			}
			moves = e.Moves()
		}
		e.Cancel(out[i:i+frameLen], far[i:i+frameLen])
	}
	if e.Moves() != moves {
		t.Errorf("the delay search moved the filter %d times in the reply after the pause", e.Moves()-moves)
	}
	sc := livingScene(t)
	twice := append(append([]int16(nil), sc.far...), sc.far...)
	st := sc.room.Render(twice, nil)
	straight := cancel(t, st.Mic, twice, EchoOptions{MaxDelay: DefaultMaxDelay})
	before := echoroom.ERLE(st.Mic[n+settle:2*n], straight[n+settle:2*n], 0)
	beforeFirst := echoroom.ERLE(st.Mic[n:n+settle], straight[n:n+settle], 0)
	after := echoroom.ERLE(s.Mic[b+settle:b+n], out[b+settle:b+n], 0)
	first := echoroom.ERLE(s.Mic[b:b+settle], out[b:b+settle], 0)
	t.Logf("echo removed: %.1f dB from 2 s on in the reply played again at once (%.1f dB in its first 2 s), %.1f dB in the reply after a pause (%.1f dB)", before, beforeFirst, after, first)
	if after < before-1.5 || first < beforeFirst-1.5 {
		t.Fatalf("the reply after a 10 s pause lost %.1f dB (%.1f dB in its first 2 s) against the same reply without the pause, want ≤ 1.5 dB", before-after, beforeFirst-first)
	}
}

// A speaker that keeps running dry while it plays only silence (a device
// fed late, or a sink without a buffer) breaks the reference's timeline
// again and again; the canceller at rest only notes that it must learn
// again when sound comes, and does no work for it meanwhile.
func TestARestingCancellerDoesNoWorkForBreaksInSilence(t *testing.T) {
	ref := NewReference(rate)
	e, err := NewEcho(ref, EchoOptions{MaxDelay: DefaultMaxDelay})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	now := time.Now()
	f := Frame{PCM: make([]int16, frameLen)}
	silence := make([]int16, 2*frameLen)
	dry := true
	frame := func() {
		now = now.Add(FrameDuration)
		if dry && e.t%10 == 0 {
			ref.played(silence, 0, now) // a new run each time: a break
		}
		f.At = now
		e.Process(&f)
	}
	for range 200 { // 2 s: the echo of nothing has died out
		frame()
	}
	e.held, e.warm = false, warmMax // as if it had learnt the room
	breaks := ref.Breaks()
	if allocs := testing.AllocsPerRun(100, frame); allocs != 0 {
		t.Errorf("%.1f allocations per frame in a quiet room, want none", allocs)
	}
	if ref.Breaks() == breaks {
		t.Fatal("the speaker never ran dry: the test does not test breaks")
	}
	if !e.resting {
		t.Fatal("the canceller does not rest in a quiet room")
	}
	// Sound again: the canceller learns the room again, as after any
	// break.
	sound := make([]int16, 20*frameLen)
	for i := range sound {
		sound[i] = int16(3000 * math.Sin(float64(i)/3))
	}
	dry = false
	ref.played(sound, 0, now.Add(300*time.Millisecond)) // heard from 20 ms ago on
	for range 10 {
		frame()
	}
	if e.resting || !e.held || e.warm > 10 {
		t.Fatalf("after breaks in silence and sound again: resting %v, held %v, %d frames learnt; want the filter learning again", e.resting, e.held, e.warm)
	}
}

// After a short reply (1.5 s: the learning hold is still on), once its
// echo is over by the canceller's own bound (the reference's history and
// warmTail) and before the canceller rests, nothing is held down: the
// hold is for frames that may hold echo, and the microphone (the room's
// noise here) passes at its level.
func TestTheLearningHoldEndsWithTheEchoOfAShortReply(t *testing.T) {
	sc := livingScene(t)
	far := append(append([]int16(nil), sc.far[:3*rate/2]...), make([]int16, 2*rate)...)
	s := sc.room.Render(far, nil)
	e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := append([]int16(nil), s.Mic...)
	last := 0 // the end of the reply's last frame of sound
	for i := 0; i+frameLen <= len(out); i += frameLen {
		if loud(far[i : i+frameLen]) {
			last = i + frameLen
		}
		e.Cancel(out[i:i+frameLen], far[i:i+frameLen])
	}
	if !e.held {
		t.Fatal("the hold is over after a 1.5 s reply: the test does not test it")
	}
	// The suppressor's output comes a frame late.
	from := last + e.reach + warmTail*frameLen + frameLen
	to := last + e.restAfter()
	in, got := energy(s.Mic[from-frameLen:to-frameLen]), energy(out[from:to])
	lost := 10 * math.Log10(in/got)
	t.Logf("the room's noise %d–%d ms after the reply: %.1f dB of it lost", (from-last)*1000/rate, (to-last)*1000/rate, lost)
	if lost > 1 {
		t.Errorf("the room's noise %d–%d ms after a short reply, its echo over, lost %.1f dB, want ≤ 1 dB (not held)", (from-last)*1000/rate, (to-last)*1000/rate, lost)
	}
}
