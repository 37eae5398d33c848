package capture

import (
	"math"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/echoroom"
	"github.com/agenthost/agenthost/internal/longtest"
)

// trueDelay is when the direct path of a world room's echo reaches the
// microphone (before or after its path or its bulk delay changes): its bulk
// delay and the first tap of its impulse response at half the largest.
func trueDelay(w echoroom.World, part int) time.Duration {
	bulk := w.Bulk
	if part > 0 && w.BulkAfter > 0 {
		bulk, part = w.BulkAfter, 0
	}
	h := w.Response(part)
	var peak float64
	for _, v := range h {
		peak = max(peak, math.Abs(v))
	}
	i := 0
	for math.Abs(h[i]) < peak/2 {
		i++
	}
	return bulk + time.Duration(i)*time.Second/time.Duration(rate)
}

// TestTheDelaySearchFindsTheDirectPathInReverberantRooms: in the tuning
// set's rooms (RT60 0.2–0.8 s, bulk delays of 40–300 ms the devices do not
// report, clipping, a path that changes), with speech and with music, alone
// and with a near talker, the delay search never says later than the
// echo's direct path arrives (the filter's window would start after the
// echo), and with speech it finds it within a few ms in the first 4 s and
// holds it. A reverberant room smears the echo's envelope later: the best
// match of envelopes is not the first arrival.
func TestTheDelaySearchFindsTheDirectPathInReverberantRooms(t *testing.T) {
	const (
		by    = 4 * rate
		early = 5 * time.Millisecond
		late  = 2 * time.Millisecond // the direct path and a reflection a millisecond after it are one at 4 kHz
	)
	for _, sc := range longtest.Pick(worldScenes(t, worldSets[0]), 6) { // all 24 with AGENTHOST_LONG_TESTS=1
		if sc.room.Kind == echoroom.DelayChange {
			continue // TestTheDelaySearchFindsTheEchoAgainSoonAfterTheBulkDelayMoves
		}
		first, moved := trueDelay(sc.room.World, 0), time.Duration(0)
		if sc.room.MoveAt > 0 {
			moved = trueDelay(sc.room.World, 1)
		}
		for _, mic := range [][]int16{sc.echo.Mic, sc.dt.Mic} {
			e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
			if err != nil {
				t.Fatal(err)
			}
			out := append([]int16(nil), mic...)
			var after, before time.Duration // the worst
			for i := 0; i+frameLen <= len(out); i += frameLen {
				e.Cancel(out[i:i+frameLen], sc.far[i:i+frameLen])
				d := e.Delay() // 0: none found yet
				want := first
				if sc.room.MoveAt > 0 && i >= worldMove+rate {
					want = moved
				}
				if d > 0 {
					after = max(after, d-want)
				}
				if !sc.music && i+frameLen >= by {
					before = max(before, want-d)
				}
			}
			e.Close()
			if after > late {
				t.Errorf("%s: the search said %v after the direct path (at %v)", sc.name(), after, first)
			}
			if before > early {
				t.Errorf("%s: from %v on the search said up to %v before the direct path (at %v), want at most %v", sc.name(), time.Duration(by)*time.Second/rate, before, first, early)
			}
		}
	}
}

// TestTheDelaySearchFindsTheEchoUnderAVoiceOverMusic: in the tuning set's
// rooms with music, a near talker from 1 s on, as loud as the echo, kept
// the first look from a sure peak in the 3 s it looked; the search's filter
// then took a repeat of the tune for the echo (1 ms in rt0.8-d12-b233) or
// found the echo only at 6–19 s, the suppressor blind (or the filter's
// window misplaced) meanwhile. By 6 s (before the next talker) the search
// says the echo's direct path.
func TestTheDelaySearchFindsTheEchoUnderAVoiceOverMusic(t *testing.T) {
	const (
		by    = 6 * rate
		early = 5 * time.Millisecond
		late  = 2 * time.Millisecond
	)
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.music }) {
		e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
		if err != nil {
			t.Fatal(err)
		}
		out := append([]int16(nil), sc.dt.Mic[:by]...)
		for i := 0; i+frameLen <= by; i += frameLen {
			e.Cancel(out[i:i+frameLen], sc.far[i:i+frameLen])
		}
		got, want := e.Delay(), trueDelay(sc.room.World, 0)
		e.Close()
		t.Logf("%s: at 6 s the search says %v (the echo's direct path: %v)", sc.name(), got, want)
		if got < want-early || got > want+late {
			t.Errorf("%s: at 6 s the search says %v, want %v (−%v…+%v)", sc.name(), got, want, early, late)
		}
	}
}

// TestTheDelaySearchFindsTheEchoAgainSoonAfterTheBulkDelayMoves: in the
// tuning set's rooms whose bulk delay moves by 60–80 ms at 10 s (the output
// device or its buffering changed), with speech and with music, alone and
// with a near talker from 11 s on, the delay search says the new direct
// path within a second of the move, and from then on never later than it
// (the filter's window would start after the echo) nor, with speech, more
// than a few ms before it. Its filter, having learnt the old path, had
// slowed down as in double talk, and the first look had long stopped
// looking: the search found the new delay only 5 s later with speech, and
// not in 20 s with music.
func TestTheDelaySearchFindsTheEchoAgainSoonAfterTheBulkDelayMoves(t *testing.T) {
	const (
		within = rate // samples after the move
		early  = 5 * time.Millisecond
		late   = 2 * time.Millisecond
	)
	for _, sc := range tuningScenes(t, func(sc worldScene) bool { return sc.room.Kind == echoroom.DelayChange }) {
		moved := trueDelay(sc.room.World, 1)
		for k, mic := range [][]int16{sc.echo.Mic, sc.dt.Mic} {
			name := sc.name() + []string{"", " with a near talker"}[k]
			e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
			if err != nil {
				t.Fatal(err)
			}
			out := append([]int16(nil), mic...)
			found := -1
			var after, before time.Duration // the worst, once found
			for i := 0; i+frameLen <= len(out); i += frameLen {
				e.Cancel(out[i:i+frameLen], sc.far[i:i+frameLen])
				if i < worldMove {
					continue
				}
				d := e.Delay()
				if found < 0 && d >= moved-early && d <= moved+late {
					found = i + frameLen - worldMove
				}
				if found >= 0 {
					after = max(after, d-moved)
					if !sc.music {
						before = max(before, moved-d)
					}
				}
			}
			e.Close()
			if found < 0 {
				t.Errorf("%s: the bulk delay moved at %d s and the search never said the new direct path (at %v); it says %v", name, worldMove/rate, moved, e.Delay())
				continue
			}
			t.Logf("%s: the search said the new direct path (at %v) %.2f s after the bulk delay moved", name, moved, float64(found)/rate)
			if found > within {
				t.Errorf("%s: the search said the new direct path %.2f s after the bulk delay moved, want within %.1f s", name, float64(found)/rate, float64(within)/rate)
			}
			if after > late {
				t.Errorf("%s: once it found the new direct path (at %v), the search said %v after it", name, moved, after)
			}
			if before > early {
				t.Errorf("%s: once it found the new direct path (at %v), the search said up to %v before it, want at most %v", name, moved, before, early)
			}
		}
	}
}
