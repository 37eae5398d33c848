package capture

import "time"

// clock gives a stream's samples the time they reached (or reach) the
// air. Each device call bounds when the stream's first sample did: a
// source's newest sample reached the microphone no later than its latency
// before the read returned; a sink's newest sample is heard no later than
// its full-buffer latency after the write returned. Delays (the scheduler,
// a buffered read, a write into an empty buffer) only make a bound later,
// so the earliest bound seen is the best, and the stream's samples are
// counted on from it without a jump. Once the anchor has settled (the
// first clockSettle bounds, in which a device's buffer fills), only a
// change larger than clockJump moves it: a shift of even a millisecond
// undoes what the echo canceller's filter learned, while a steady error of
// a few is what its delay search and filter absorb. A bound later than the anchor by more
// than jump for a whole window means samples were lost (an overflow or an
// underrun): the anchor moves to it.
type clock struct {
	rate   int
	pos    int64     // samples counted
	anchor time.Time // when sample 0 reached the air
	win    time.Time // the earliest bound in this window
	winN   int
	n      int // bounds taken
	jumps  int // times a settled anchor moved (the stream's timeline jumped)
}

const (
	clockWindow = 100 // bounds per window (1 s of 10 ms frames)
	clockJump   = 20 * time.Millisecond
	clockSlack  = time.Millisecond // smaller improvements are jitter, kept out
	clockSettle = 50               // bounds in which the anchor settles
)

func (c *clock) dur(n int64) time.Duration {
	return time.Duration(n * int64(time.Second) / int64(c.rate))
}

// bound takes one device call's bound: n more samples, of which the newest
// was at most at edge. It returns when the first of the n was.
func (c *clock) bound(edge time.Time, n int) time.Time {
	c.pos += int64(n)
	cand := edge.Add(-c.dur(c.pos))
	slack := clockSlack
	if c.n++; c.n > clockSettle {
		slack = clockJump
	}
	if c.anchor.IsZero() || cand.Before(c.anchor.Add(-slack)) {
		if c.n > clockSettle {
			c.jumps++
		}
		c.anchor = cand
	}
	if c.winN == 0 || cand.Before(c.win) {
		c.win = cand
	}
	if c.winN++; c.winN >= clockWindow {
		if c.win.Sub(c.anchor) > clockJump {
			c.jumps++
			c.anchor = c.win
		}
		c.winN = 0
	}
	return c.anchor.Add(c.dur(c.pos - int64(n)))
}

// stamp is bound for a source: n samples read at now from a device whose
// newest sample is lat old.
func (c *clock) stamp(now time.Time, lat time.Duration, n int) time.Time {
	return c.bound(now.Add(-lat), n)
}

// restart forgets the stream: the next bound starts a new one.
func (c *clock) restart() { *c = clock{rate: c.rate} }
