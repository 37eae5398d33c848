// Package gate keeps the wake-word detector asleep while the room is quiet.
// A Gate sees every microphone frame; while nothing is louder than the
// room's noise floor (silence, a steady fan) it passes nothing on, and
// the detector runs no model. The first loud block opens it: it hands on
// the last PreRoll of audio (the detector's whole context, so that a
// phrase that is the first sound in a quiet room is scored exactly as in
// a continuous stream), then every frame until Hang has passed without a
// loud block. In doubt it opens: at the start, after a gap in the stream,
// and in a room louder than MaxFloor.
//
// The level is that of the signal's first difference (x[n] − x[n−1]),
// which takes 25 dB and more off a fan's rumble (below 100 Hz) but only
// 8 to 14 off a voice's formants (500 Hz to 1 kHz), and nothing above 2.7 kHz;
// the noise floor follows the 100 ms level down at once and up at Rise dB
// a second, so speech, which dips between words, never lifts it to its
// own level. Everything is counted in samples, never on the wall clock.
// Pure Go; not safe for concurrent use.
package gate

import (
	"fmt"
	"math"
	"time"
)

// Config of a Gate. Zero fields take the defaults shown.
type Config struct {
	Rate int // samples per second; 16000
	// PreRoll is the audio handed on when the gate opens: at least the
	// detector's context (about 2.1 s for openWakeWord); 2.2 s.
	PreRoll time.Duration
	// Align: the handed-on audio starts a multiple of Align samples (the
	// detector's hop) after the stream began (its first position, or the
	// first after a gap), so that the detector's steps fall where they
	// would in the continuous stream; 1280.
	Align int
	// Hang is how long the gate stays open after the last loud block: at
	// least the detector's context, so that every score whose audio holds
	// a loud block is computed; 2.2 s.
	Hang time.Duration
	// Margin: a block this many dB above the noise floor is loud; 6.
	Margin float64
	// MinFloor and MaxFloor bound the noise floor (dBFS of the
	// pre-emphasised signal): silence opens at MinFloor+Margin; a room
	// louder than MaxFloor keeps the gate open; -70 and -40.
	MinFloor, MaxFloor float64
	// Rise is how fast the floor climbs (dB per second); 2.
	Rise float64
}

// Block is the analysis block: 20 ms.
const Block = 20 * time.Millisecond

func (c *Config) defaults() error {
	if c.Rate == 0 {
		c.Rate = 16000
	}
	if c.PreRoll == 0 {
		c.PreRoll = 2200 * time.Millisecond
	}
	if c.Align == 0 {
		c.Align = 1280
	}
	if c.Hang == 0 {
		c.Hang = 2200 * time.Millisecond
	}
	if c.Margin == 0 {
		c.Margin = 6
	}
	if c.MinFloor == 0 {
		c.MinFloor = -70
	}
	if c.MaxFloor == 0 {
		c.MaxFloor = -40
	}
	if c.Rise == 0 {
		c.Rise = 2
	}
	if c.Rate <= 0 || c.PreRoll < 0 || c.Align <= 0 || c.Hang < 0 || c.Margin < 0 || c.Rise < 0 || c.MinFloor > c.MaxFloor {
		return fmt.Errorf("gate: bad config %+v", *c)
	}
	return nil
}

// Gate decides, frame by frame, what the detector hears.
type Gate struct {
	c     Config
	block int   // samples per analysis block
	keep  int   // samples of pre-roll kept: PreRoll + Align
	hang  int64 // Hang in samples
	rise  float64

	next      int64   // the position expected next; -1 before the first frame
	ring      []int16 // the last samples seen; ring[0] is at ringStart
	ringStart int64
	sent      int64 // the position after the last sample handed on; -1 none
	anchor    int64 // where the stream began: hand-ons start Align apart from it

	open     bool
	loudTill int64 // open until this position

	acc   float64 // pre-emphasised energy of the block so far
	n     int     // samples in it
	prev  float64 // the previous sample, for pre-emphasis
	smoo  float64 // the 100 ms power (linear)
	floor float64 // the noise floor (dB)

	// Opened counts the times the gate opened.
	Opened int64
}

// New returns a gate, open until it has heard the room.
func New(c Config) (*Gate, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	g := &Gate{c: c, block: int(Block.Seconds() * float64(c.Rate)), next: -1, sent: -1, floor: c.MinFloor}
	g.keep = int(c.PreRoll.Seconds()*float64(c.Rate)) + c.Align
	g.hang = int64(c.Hang.Seconds() * float64(c.Rate))
	g.rise = c.Rise * Block.Seconds()
	return g, nil
}

// Open reports whether the gate is open.
func (g *Gate) Open() bool { return g.open }

// Floor is the noise floor, in dBFS of the pre-emphasised signal.
func (g *Gate) Floor() float64 { return g.floor }

// Replay makes the next frame hand on the pre-roll again, and opens the
// gate (a new detector that has heard nothing).
func (g *Gate) Replay() {
	g.sent = -1
	g.openAt(g.next)
}

// Push takes the frame pcm at stream position pos and calls emit with
// what the detector is to hear now, in order: nothing while the gate is
// closed; when it opens, the pre-roll and then pcm; while it is open, pcm.
// A position that does not follow on from the last frame is a gap: the
// audio from before it is never handed on, and the gate opens. It returns
// the number of pcm's samples handed on.
func (g *Gate) Push(pos int64, pcm []int16, emit func(pos int64, pcm []int16)) int {
	if pos != g.next {
		g.ring, g.ringStart, g.sent, g.anchor = g.ring[:0], pos, -1, pos
		g.acc, g.n, g.prev = 0, 0, 0
		g.openAt(pos)
	}
	g.next = pos + int64(len(pcm))
	g.remember(pcm)
	g.measure(pos, pcm)
	if !g.open {
		return 0
	}
	if g.sent == pos {
		emit(pos, pcm)
	} else {
		g.handOn(pos, emit)
	}
	g.sent = g.next
	return len(pcm)
}

// handOn hands on the ring from where the detector's stream left off, when
// the ring still holds that and it is no longer ago than the pre-roll;
// else from PreRoll before the frame at pos, aligned.
func (g *Gate) handOn(pos int64, emit func(int64, []int16)) {
	from := g.sent
	if from < g.ringStart || pos-from > int64(g.keep) {
		a := int64(g.c.Align)
		from = max(g.ringStart, pos-int64(g.keep)) - g.anchor
		from = g.anchor + (from+a-1)/a*a
	}
	if from < g.next {
		emit(from, append([]int16(nil), g.ring[from-g.ringStart:]...))
	}
}

// remember keeps at least the last keep samples before pcm, and pcm.
func (g *Gate) remember(pcm []int16) {
	if len(g.ring)+len(pcm) > cap(g.ring) {
		drop := max(0, len(g.ring)-g.keep)
		r := g.ring
		if c := g.keep + 2*max(g.keep, len(pcm)); cap(r) < c {
			r = make([]int16, 0, c)
		}
		g.ring = append(r[:0], g.ring[drop:]...)
		g.ringStart += int64(drop)
	}
	g.ring = append(g.ring, pcm...)
}

func (g *Gate) openAt(pos int64) {
	if !g.open {
		g.Opened++
	}
	g.open = true
	g.loudTill = max(g.loudTill, pos+g.hang)
}

// measure runs the blocks of pcm (at pos) through the level meter.
func (g *Gate) measure(pos int64, pcm []int16) {
	const norm = 1.0 / (32768 * 32768)
	for i, s := range pcm {
		x := float64(s)
		y := x - g.prev
		g.prev = x
		g.acc += y * y
		g.n++
		if g.n < g.block {
			continue
		}
		p := g.acc / float64(g.n) * norm
		g.acc, g.n = 0, 0
		g.smoo += 0.2 * (p - g.smoo)
		level, smooth := dB(p), dB(g.smoo)
		if smooth < g.floor {
			g.floor = smooth
		} else {
			g.floor = min(smooth, g.floor+g.rise)
		}
		g.floor = max(g.c.MinFloor, min(g.c.MaxFloor, g.floor))
		end := pos + int64(i) + 1
		if level > g.floor+g.c.Margin || smooth >= g.c.MaxFloor {
			g.openAt(end)
		}
	}
	if g.open && pos >= g.loudTill {
		g.open = false
	}
}

func dB(p float64) float64 {
	if p <= 1e-14 {
		return -140
	}
	return 10 * math.Log10(p)
}
