package capture

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/echoroom"
	"github.com/agenthost/agenthost/internal/longtest"
)

// livingScene is the tuning set's first living room (RT60 0.4 s, a 250 Hz
// loudspeaker, −60 dBFS microphone noise, 145 ms the devices do not
// report) with 20 s of speech; the figures per condition on the held-out
// set are BenchmarkWorldEcho's.
func livingScene(t *testing.T) worldScene {
	for _, sc := range worldScenes(t, worldSets[0]) {
		if sc.room.Kind == echoroom.Living && !sc.music {
			return sc
		}
	}
	t.Fatal("no living room in the tuning set")
	return worldScene{}
}

// tuningScenes are the tuning set's scenes that keep accepts; a test over
// none of them would test nothing. By default two of them at most (the
// first and the last); AGENTHOST_LONG_TESTS=1 gives all (longtest).
func tuningScenes(t *testing.T, keep func(worldScene) bool) []worldScene {
	var out []worldScene
	for _, sc := range worldScenes(t, worldSets[0]) {
		if keep(sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		t.Fatal("no scene of the tuning set to test")
	}
	return longtest.Pick(out, 2)
}

// tuningTune is the far end of the tuning set's first (or last) dry room
// with music: one of its two tunes.
func tuningTune(t *testing.T, last bool) []int16 {
	dry := tuningScenes(t, func(sc worldScene) bool { return sc.music && sc.room.Kind == echoroom.Dry })
	if last {
		return dry[len(dry)-1].far
	}
	return dry[0].far
}

func TestALivingRoomsEchoIsTakenOff(t *testing.T) {
	sc := livingScene(t)
	out := cancel(t, sc.echo.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay})
	erle := echoroom.ERLE(sc.echo.Mic, out, settle)
	t.Logf("echo removed from 2 s on in %s: %.1f dB", sc.room, erle)
	// The target, 25 dB, is reported by BenchmarkWorldEcho; this floor
	// keeps the test steady across espeak-ng versions.
	if erle < 20 {
		t.Fatalf("echo removed from 2 s on = %.1f dB, want ≥ 20 dB", erle)
	}
}

func TestABargeInInTheFirstSecondsIsHeard(t *testing.T) {
	lost := firstBargeInLost(t, livingScene(t))
	t.Logf("near speech said from 1 s on, over the reply: %.1f dB of it lost", lost)
	if lost > 6 {
		t.Fatalf("a barge-in 1 s into a reply lost %.1f dB, want ≤ 6 dB", lost)
	}
}

func TestAnEchoPathThatChangesIsCancelledAgainWithinASecond(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.room.Kind == echoroom.Moving }) {
		cancelledAgainWithinASecond(t, sc.name(), sc.echo.Mic, sc.far)
	}
}

// cancelledAgainWithinASecond checks that the canceller takes 20 dB off
// mic's echo of far in the second second after the path changed.
func cancelledAgainWithinASecond(t *testing.T, name string, mic, far []int16) {
	t.Helper()
	out := cancel(t, mic, far, EchoOptions{MaxDelay: DefaultMaxDelay})
	a, b := worldMove+rate, worldMove+2*rate
	erle := echoroom.ERLE(mic[a:b], out[a:b], 0)
	t.Logf("%s: echo removed in the second second after the path changed: %.1f dB", name, erle)
	if erle < 20 {
		t.Errorf("%s: echo removed in the second second after the path changed = %.1f dB, want ≥ 20 dB", name, erle)
	}
}

func TestABargeInInTheFirstSecondsIsHeardInEveryRoomOfTheTuningSet(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool {
		return !sc.music && (sc.room.Kind == echoroom.Dry || sc.room.Kind == echoroom.Living)
	}) {
		lost := firstBargeInLost(t, sc)
		t.Logf("%s: near speech said from 1 s on, over the reply: %.1f dB of it lost", sc.name(), lost)
		if lost > 6 {
			t.Errorf("%s: a barge-in 1 s into a reply lost %.1f dB, want ≤ 6 dB", sc.name(), lost)
		}
	}
}

// firstBargeInLost returns how much of the scene's first near speech, said
// from 1 s into the reply as loud as the echo, the canceller takes away (dB).
func firstBargeInLost(t *testing.T, sc worldScene) float64 { return bargeInsLost(t, sc)[0] }

// bargeInsLost returns how much of each of the scene's near speeches, said
// as loud as the echo (at 1, 6, 11 and 16 s), the canceller takes away (dB).
func bargeInsLost(t *testing.T, sc worldScene) []float64 {
	out := cancel(t, sc.dt.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay})
	var lost []float64
	for _, seg := range sc.segs {
		_, xy, xx, _ := alongNear(out, sc.dt.Near, seg)
		lost = append(lost, nearLost(xy, xx))
	}
	return lost
}

func TestTheEchoOfEveryLivingRoomInTheTuningSetIsTakenOffBy25dB(t *testing.T) {
	echoRemovedAtLeast(t, func(sc worldScene) bool { return !sc.music && sc.room.Kind == echoroom.Living }, 25)
}

// echoRemovedAtLeast: in each scene of the tuning set that pick takes, the
// canceller takes at least want dB of the echo off from 2 s on.
func echoRemovedAtLeast(t *testing.T, pick func(worldScene) bool, want float64) {
	for _, sc := range tuningScenes(t, pick) {
		out := cancel(t, sc.echo.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay})
		erle := echoroom.ERLE(sc.echo.Mic, out, settle)
		t.Logf("%s: echo removed from 2 s on: %.1f dB", sc.name(), erle)
		if erle < want {
			t.Errorf("%s: echo removed from 2 s on = %.1f dB, want ≥ %g dB", sc.name(), erle, want)
		}
	}
}

func TestTheEchoOfEveryDryRoomInTheTuningSetIsTakenOffBy35dB(t *testing.T) {
	// The delay search finds the echo 0.7–0.8 s into the reply, and
	// the filter, its window moved there, starts again: learning from
	// nothing then, it took 31.7–34.2 dB off from 2 s on in three of
	// the four scenes.
	echoRemovedAtLeast(t, func(sc worldScene) bool { return sc.room.Kind == echoroom.Dry }, 35)
}

// Rooms beyond the three sets (seed 17), with the tuning set's second tune:
// after the path changed, the learning hold must not end while the tune's
// onsets still pass the young filter and the suppressor.
func TestAnEchoPathThatChangesUnderMusicIsCancelledAgainWithinASecond(t *testing.T) {
	far := tuningTune(t, true) // the second tune
	moving := 0
	for _, r := range echoroom.WorldRooms(17, 2) {
		if r.Kind != echoroom.Moving {
			continue
		}
		moving++
		s := r.Render(far, nil)
		cancelledAgainWithinASecond(t, r.String()+"/music", s.Mic, far)
	}
	if moving == 0 {
		t.Fatal("seed 17 has no moving room")
	}
}

// Rooms beyond the three sets (seeds 10 and 12–13), with the tuning set's
// first tune: its beat repeats the tune at nearly the echo's delay, and
// the delay search's filter took the repeat (a lag of 0–2 ms) for the
// echo before the first look had seen enough to tell them apart; nothing
// corrected it; with its window 240–310 ms early, the filter took 8–11
// dB off for good in two of them.
func TestTheEchosDelayIsFoundUnderATuneThatRepeatsItselfAtTheEchosDelay(t *testing.T) {
	far := tuningTune(t, false) // the first tune
	for _, seed := range longtest.Pick([]uint64{10, 12, 13}, 1) {
		r := echoroom.WorldRooms(seed, 2)[2*int(echoroom.Moving)]
		s := r.Render(far, nil)
		e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
		if err != nil {
			t.Fatal(err)
		}
		out := append([]int16(nil), s.Mic...)
		for i := 0; i+frameLen <= worldMove; i += frameLen {
			e.Cancel(out[i:i+frameLen], far[i:i+frameLen])
		}
		got := e.Delay()
		e.Close()
		want := r.Bulk + r.Direct
		erle := echoroom.ERLE(s.Mic[5*rate:worldMove], out[5*rate:worldMove], 0)
		t.Logf("%s/music: delay found %s (the echo's: %s), echo removed over 5–10 s: %.1f dB", r, got, want, erle)
		if d := got - want; d < -2*time.Millisecond || d > 2*time.Millisecond {
			t.Errorf("%s/music: delay found %s, want %s ± 2 ms", r, got, want)
		}
	}
}

// Rooms beyond the three sets (seeds 10, 13, 14) with the tuning set's
// speech: the first look corrects the search's filter in the first
// seconds, and the suppressor must not forget the echo's level then (it
// stays the same), or near speech said at 1 s is held down with the echo
// while it learns again.
func TestABargeInIsHeardWhenTheFirstLookCorrectsTheEchosDelay(t *testing.T) {
	rooms := []struct {
		seed uint64
		room string
	}{{10, "rt0.6-d7-b82"}, {13, "rt0.3-d23-b74"}, {14, "rt0.3-d8-b68-soft0.3"}}
	for _, r := range longtest.Pick(rooms, 1) {
		seed, room := r.seed, r.room
		s := worldSets[0]
		s.name, s.roomSeed = fmt.Sprint("tuning material, rooms of seed ", seed), seed
		found := false
		for _, sc := range worldScenes(t, s) {
			if sc.music || sc.room.String() != room {
				continue
			}
			found = true
			lost := firstBargeInLost(t, sc)
			t.Logf("seed %d, %s: near speech said from 1 s on, over the reply: %.1f dB of it lost", seed, sc.name(), lost)
			if lost > 6 {
				t.Errorf("seed %d, %s: a barge-in 1 s into a reply lost %.1f dB, want ≤ 6 dB", seed, sc.name(), lost)
			}
		}
		if !found {
			t.Fatalf("seed %d has no room %s", seed, room)
		}
	}
}

// A room beyond the three sets (seed 10) with the tuning set's second
// tune: the delay search's estimate wanders by 18 ms within the filter's
// window and back before the path changes; neither the filter nor the
// echo's level changed, and the canceller must not start learning again
// (the output held, the divergence unwatched) at each.
func TestAnEchoPathThatChangesAfterTheDelayEstimateWanderedIsCancelledAgainWithinASecond(t *testing.T) {
	far := tuningTune(t, true) // the second tune
	r := echoroom.WorldRooms(10, 2)[2*int(echoroom.Moving)]
	s := r.Render(far, nil)
	cancelledAgainWithinASecond(t, r.String()+"/music", s.Mic, far)
}

func TestABargeInOverMusicPassesTheLearningHoldInTheBandsWhereItStandsAboveTheEcho(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music }) {
		// Near speech 1 s into the music keeps the delay search from
		// finding the echo for seconds in some rooms, and while the filter
		// learns the hold takes 30 dB off every frame the suppressor does
		// not take for near speech; over music, whose level the near voice
		// only matches, it rarely does, and a barge-in at 1 s was held down
		// with the echo (12.7–14.9 dB in three rooms).
		lost := firstBargeInLost(t, sc)
		t.Logf("%s: near speech said from 1 s on, over music: %.1f dB of it lost", sc.name(), lost)
		if lost > 14 {
			t.Errorf("%s: a barge-in 1 s into music lost %.1f dB, want ≤ 14 dB (the hold passes the bands where it stands above the echo)", sc.name(), lost)
		}
	}
}

func TestABargeInOverMusicIsHeardWhereTheYoungFilterTakesTheEchoDown(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool {
		return sc.music && (sc.room.Kind == echoroom.Dry || sc.room.Kind == echoroom.Living)
	}) {
		// While the filter learns, the hold passes a band of the
		// microphone 5 dB above its echo expected; a voice as loud as the
		// music rarely stands that high, though the young filter leaves
		// the echo 5–10 dB below it: said at 1 s, it kept a correlation
		// of 0.67 in rt0.4-d30-b145.
		out := cancel(t, sc.dt.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay})
		c, _, _, _ := alongNear(out, sc.dt.Near, sc.segs[0])
		t.Logf("%s: near speech said from 1 s on, over music: correlation %.2f", sc.name(), c)
		if c < 0.7 {
			t.Errorf("%s: near speech said 1 s into music kept a correlation of %.2f, want ≥ 0.7", sc.name(), c)
		}
	}
}

// The moving rooms beyond the three sets of seeds 5, 22 and 27 with the
// tuning set's first far voice: after the path changed, a word through
// the new path stands above the suppressor's model of the old one, is
// taken for near speech, and must not pass the learning hold whole.
func TestAnEchoPathThatChangesUnderSpeechIsCancelledAgainWithinASecond(t *testing.T) {
	far := tuningScenes(t, func(sc worldScene) bool { return !sc.music })[0].far // the first voice
	for _, seed := range longtest.Pick([]uint64{5, 22, 27}, 1) {
		for _, r := range echoroom.WorldRooms(seed, 2)[2*int(echoroom.Moving) : 2*int(echoroom.Moving)+2] {
			s := r.Render(far, nil)
			cancelledAgainWithinASecond(t, fmt.Sprintf("seed %d, %s/speech", seed, r), s.Mic, far)
		}
	}
}

func TestNearSpeechOverMusicIsKeptOnceTheFilterHasLearnt(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool {
		return sc.music && (sc.room.Kind == echoroom.Dry || sc.room.Kind == echoroom.Living)
	}) {
		// After the learning hold, the suppressor takes 13 dB more than
		// the residual it expects off every band of a frame it does not
		// take for near speech; over music as loud as the voice, many of
		// the voice's frames are not, and its bands went with the echo.
		for i, lost := range bargeInsLost(t, sc)[1:] {
			at := sc.segs[i+1][0] / rate
			t.Logf("%s: near speech said at %d s, over music: %.1f dB of it lost", sc.name(), at, lost)
			if lost > 7 {
				t.Errorf("%s: near speech said at %d s over music lost %.1f dB, want ≤ 7 dB", sc.name(), at, lost)
			}
		}
	}
}

func TestABargeInOverMusicBeforeTheEchosDelayIsFoundIsNotHeldWhole(t *testing.T) {
	rooms := []string{"rt0.3-d7-b95-hard0.3", "rt0.3-d23-b79-soft0.3"}
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music && slices.Contains(rooms, sc.room.String()) }) {
		// The voice said at 1 s keeps the delay search from the echo until
		// 3.6–3.9 s. Meanwhile the suppressor took some of its frames for
		// near speech against its unaligned model, which the hold does
		// not trust before the delay is found: such a frame was neither
		// held per band nor passed, but held down whole (12.9 dB of the
		// voice lost in rt0.3-d7-b95-hard0.3, 4.9 in the other).
		lost := firstBargeInLost(t, sc)
		t.Logf("%s: near speech said from 1 s on, over music, before the echo's delay is found: %.1f dB of it lost", sc.name(), lost)
		if lost > 10 {
			t.Errorf("%s: near speech said 1 s into music, before the echo's delay is found, lost %.1f dB, want ≤ 10 dB", sc.name(), lost)
		}
	}
}

func TestTheLearningHoldDoesNotStartAgainWhenTheFirstLookMovesOnlyTheSuppressor(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music && sc.room.Kind == echoroom.Living }) {
		// The first look at the echo's delay looks for 6 s of sound; when
		// it corrects the delay by a few ms after the hold is over, the
		// filter's window stays and only the suppressor's reference
		// moves: the echo is as well taken off as before, and holding the
		// output down again would hold a barge-in down with it.
		e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
		if err != nil {
			t.Fatal(err)
		}
		out := append([]int16(nil), sc.echo.Mic...)
		ended, again := 0, 0
		for i := 0; i+frameLen <= worldMove; i += frameLen {
			e.Cancel(out[i:i+frameLen], sc.far[i:i+frameLen])
			switch {
			case !e.held && ended == 0:
				ended = i + frameLen
			case e.held && ended > 0 && again == 0:
				again = i + frameLen
			}
		}
		e.Close()
		if ended == 0 {
			t.Errorf("%s: the learning hold did not end by %.2f s", sc.name(), float64(worldMove)/rate)
			continue
		}
		t.Logf("%s: the learning hold ended at %.2f s", sc.name(), float64(ended)/rate)
		if again > 0 {
			t.Errorf("%s: the learning hold ended at %.2f s and started again at %.2f s, with neither the filter's window nor the echo path moved", sc.name(), float64(ended)/rate, float64(again)/rate)
		}
	}
}

func TestTheLearningHoldIsNotProlongedByTheFirstLookAfterItsFirstSeconds(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music && sc.room.String() == "rt0.3-d14-b254-hard0.3" }) {
		// The first look looks for 6 s; its corrections of the delay by a
		// few ms, each of which started the hold's count again, kept the
		// output held down to 7.29 s (3.66 s when it looked for 3 s),
		// though the canceller had taken 30–40 dB off from 3.75 s on.
		e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
		if err != nil {
			t.Fatal(err)
		}
		out := append([]int16(nil), sc.echo.Mic...)
		end := len(out)
		for i := 0; i+frameLen <= len(out); i += frameLen {
			e.Cancel(out[i:i+frameLen], sc.far[i:i+frameLen])
			if !e.held {
				end = i + frameLen
				break
			}
		}
		e.Close()
		t.Logf("%s: the learning hold ended at %.2f s", sc.name(), float64(end)/rate)
		if end > 5*rate {
			t.Errorf("%s: the learning hold ended at %.2f s, want by 5 s", sc.name(), float64(end)/rate)
		}
	}
}

func TestABargeInDuringTheLearningHoldIsHeardWhereTheYoungFilterTakesTheEchoOff(t *testing.T) {
	// The filter, its window moved to the echo found at 0.8 s, takes
	// it down well by 1 s: its output alone keeps a correlation of
	// 0.89 with a voice said then. But the suppressor's model of its
	// residual, learnt over the last half second and from the voice
	// too (the frames are not taken for near speech: the microphone
	// stands only 2 dB above its echo), takes the voice for residual,
	// and the hold held its bands down: 0.73.
	bargeInKeeps(t, "rt0.4-d30-b145", "during the learning hold", 0.77)
}

// bargeInKeeps: in room's music scene of the tuning set, near speech said
// 1 s in (when) keeps a correlation of at least want.
func bargeInKeeps(t *testing.T, room, when string, want float64) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music && sc.room.String() == room }) {
		out := cancel(t, sc.dt.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay})
		c, _, _, _ := alongNear(out, sc.dt.Near, sc.segs[0])
		t.Logf("%s: near speech said from 1 s on, over music, %s: correlation %.2f", sc.name(), when, c)
		if c < want {
			t.Errorf("%s: near speech said 1 s into music, %s, kept a correlation of %.2f, want ≥ %.2f", sc.name(), when, c, want)
		}
	}
}

func TestTheYoungFiltersNearSpeechTestPassesNoEchoOfMusicWithNobodySpeaking(t *testing.T) {
	rooms := []string{"rt0.4-d30-b145", "rt0.3-d8-b136"}
	// During the first learning hold, the young filter's output
	// standing above the residual it leaves, with the microphone 2 dB
	// above its echo, was taken for near speech; but a tune's new
	// notes, which the young filter has yet to learn, lift its output
	// as much, in bands where the microphone holds nothing but the
	// echo expected: 33.7 dB taken off rt0.4-d30-b145/music from 2 s
	// on (35.1 without the test), 37.2 off rt0.3-d8-b136/music (40.4).
	echoRemovedAtLeast(t, func(sc worldScene) bool { return sc.music && slices.Contains(rooms, sc.room.String()) }, 34.5)
}

func TestABargeInBeforeTheEchosDelayIsFoundIsHeardWhereTheFilterAlreadyTakesTheEchoOff(t *testing.T) {
	// The voice said at 1 s keeps the delay search from the echo until
	// 3.6 s, but the echo (95 ms late) falls within the filter's
	// window from the start, and the filter takes it down: its output
	// stands well above the residual it leaves when the voice speaks.
	// The hold, blind, held the voice against the loudest the echo
	// could be at any lag: a correlation of 0.69.
	bargeInKeeps(t, "rt0.3-d7-b95-hard0.3", "before the echo's delay is found", 0.74)
}

func TestTheBlindModelDoesNotLearnAFrameTheYoungFilterTookForNearSpeech(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music && sc.room.String() == "rt0.3-d7-b95-hard0.3" }) {
		// Before the delay is found, a frame the young filter's output
		// takes for near speech passes the hold whole; the blind model
		// (the echo's level against the reference's envelope) must not
		// learn it as echo meanwhile, or the voice lifts the echo it is
		// told from and the rest of the barge-in is held down.
		e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
		if err != nil {
			t.Fatal(err)
		}
		mic, ref := append([]int16(nil), sc.dt.Mic...), make([]int16, frameLen)
		young, learnt := 0, 0
		for i := 0; i+frameLen <= len(mic); i += frameLen {
			clear(ref)
			if i < len(sc.far) {
				copy(ref, sc.far[i:min(len(sc.far), i+frameLen)])
			}
			before := e.post.bTrain
			e.Cancel(mic[i:i+frameLen], ref)
			if e.post.blind && e.post.young {
				young++
				if e.post.bTrain > before {
					learnt++
				}
			}
		}
		e.Close()
		t.Logf("%s: %d frames taken for near speech by the young filter, blind; the blind model learnt %d of them", sc.name(), young, learnt)
		if young == 0 {
			t.Fatalf("%s: no frame taken for near speech by the young filter before the delay was found: the test tests nothing", sc.name())
		}
		if learnt > 0 {
			t.Errorf("%s: the blind model learnt %d of the %d frames the young filter took for near speech as echo, want none", sc.name(), learnt, young)
		}
	}
}

// The tuning set's rooms whose bulk delay moves at 10 s (the output device
// or its buffering changed), with speech and with music: the canceller
// takes 20 dB off again within 1.5 s, and from 2 s after the move to the
// end holds within 3 dB of what its filter alone (without the suppressor)
// holds. The filter, its window before or after the echo, cancelled
// nothing; the search found the new delay 5 s later (with speech) or
// never (with music), and the suppressor, aligned with the old delay,
// took the echo's onsets for near speech: 5.7 s to get back to 20 dB,
// 9.0 dB held with speech (the filter alone: 29.2).
func TestTheEchoIsCancelledAgainSoonAfterTheBulkDelayMoves(t *testing.T) {
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.room.Kind == echoroom.DelayChange }) {
		out := cancel(t, sc.echo.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay})
		alone := cancel(t, sc.echo.Mic, sc.far, EchoOptions{MaxDelay: DefaultMaxDelay, NoResidual: true})
		back := backTo(sc.echo, out, worldMove, 20)
		held := echoroom.ERLE(sc.echo.Mic, out, worldMove+2*rate)
		filter := echoroom.ERLE(sc.echo.Mic, alone, worldMove+2*rate)
		t.Logf("%s: back to 20 dB %.2f s after the bulk delay moved; from 2 s after it on, %.1f dB removed (the filter alone: %.1f dB)", sc.name(), back, held, filter)
		if back > 1.5 {
			t.Errorf("%s: back to 20 dB %.2f s after the bulk delay moved, want within 1.5 s", sc.name(), back)
		}
		if held < filter-3 {
			t.Errorf("%s: from 2 s after the bulk delay moved on, %.1f dB removed, want within 3 dB of the filter alone's %.1f dB", sc.name(), held, filter)
		}
	}
}
