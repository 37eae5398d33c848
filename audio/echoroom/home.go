package echoroom

import (
	"math"
	"math/rand/v2"
	"time"
)

// Home is a simulated home of rooms with speakers in them, for the
// household's tests and benchmarks: one utterance rendered as each
// speaker's microphone hears it. A speaker in the talker's room hears the
// direct sound (falling as 1/r, delayed by r/343 m/s, louder where the
// talker faces) and the room's diffuse reverberation; one in another room
// hears only what comes through the walls and doors (TransmissionLoss
// down), reverberated in its own room. Each microphone has its own gain
// and its own noise (a fan, a fridge) over the room's.
type Home struct {
	Rate     int // default 16000
	Rooms    []HomeRoom
	Speakers []HomeSpeaker
	// TransmissionLoss is how much quieter the diffuse sound of one room
	// is in the next, in dB (default 15: a wall with an open door).
	TransmissionLoss float64
	// Quiet renders without the rooms' and microphones' noise: a second
	// sound to add to a rendering that has it.
	Quiet bool
}

// HomeRoom is a room: a rectangle in metres, its height, its reverberation
// time and its ambient noise at a microphone (dBFS RMS).
type HomeRoom struct {
	Name                   string
	X0, Y0, X1, Y1, Height float64
	RT60                   time.Duration
	Noise                  float64
}

// HomeSpeaker is a speaker where it stands, with its microphone's gain
// (dB, how it differs from the others') and its own noise (dBFS RMS; 0:
// none beyond the room's).
type HomeSpeaker struct {
	Name, Room string
	X, Y       float64
	Gain       float64
	Noise      float64
}

// Talker is a person who speaks: where, the direction faced (radians,
// 0 along +X) and how loud their voice is at 1 m in front, in dB over the
// pcm given to Hear.
type Talker struct {
	Room   string
	X, Y   float64
	Facing float64
	Level  float64
}

const soundSpeed = 343.0

func (h Home) rate() int {
	if h.Rate <= 0 {
		return 16000
	}
	return h.Rate
}

func (h Home) room(name string) HomeRoom {
	for _, r := range h.Rooms {
		if r.Name == name {
			return r
		}
	}
	return HomeRoom{Name: name, X1: 4, Y1: 4, Height: 2.5, RT60: 400 * time.Millisecond}
}

// criticalDistance is where the direct sound is as loud as the diffuse
// field (Sabine: 0.057·√(V/RT60)).
func (r HomeRoom) criticalDistance() float64 {
	v := (r.X1 - r.X0) * (r.Y1 - r.Y0) * max(r.Height, 2)
	return 0.057 * math.Sqrt(v/max(r.RT60.Seconds(), 0.1))
}

// Distance is from the talker to speaker i, in metres.
func (h Home) Distance(t Talker, i int) float64 {
	s := h.Speakers[i]
	return math.Hypot(s.X-t.X, s.Y-t.Y)
}

// Nearest is the speaker the talker means: the nearest in their room, or
// the nearest of all when their room has none.
func (h Home) Nearest(t Talker) int {
	best, bestD, inRoom := -1, math.Inf(1), false
	for i, s := range h.Speakers {
		d, same := h.Distance(t, i), s.Room == t.Room
		if (same && !inRoom) || (same == inRoom && d < bestD) {
			best, bestD, inRoom = i, d, same
		}
	}
	return best
}

// Faced is the speaker the talker speaks toward: the one in their room
// their direct sound is loudest at (the voice falls as 1/r and toward the
// back of the head), or the nearest of all when their room has none.
func (h Home) Faced(t Talker) int {
	best, bestG := -1, 0.0
	for i, s := range h.Speakers {
		if s.Room != t.Room {
			continue
		}
		if g := facingGain(h, t, i) / max(h.Distance(t, i), 0.3); g > bestG {
			best, bestG = i, g
		}
	}
	if best < 0 {
		return h.Nearest(t)
	}
	return best
}

// facingGain is how much of the voice's front level leaves toward speaker
// i: 1 in front, 8 dB down behind.
func facingGain(h Home, t Talker, i int) float64 {
	s := h.Speakers[i]
	angle := math.Atan2(s.Y-t.Y, s.X-t.X) - t.Facing
	return math.Pow(10, -4*(1-math.Cos(angle))/20)
}

// Hear renders pcm said by t as each speaker hears it, after lead of
// silence (each microphone's noise runs through it) and with tail after.
func (h Home) Hear(pcm []int16, t Talker, lead, tail time.Duration, seed uint64) [][]int16 {
	rate := h.rate()
	n := len(pcm) + int((lead+tail).Seconds()*float64(rate))
	x := make([]float64, n)
	off := int(lead.Seconds() * float64(rate))
	for i, v := range pcm {
		x[off+i] = float64(v) / 32768
	}
	src := h.room(t.Room)
	tl := h.TransmissionLoss
	if tl == 0 {
		tl = 15
	}
	out := make([][]int16, len(h.Speakers))
	for i, s := range h.Speakers {
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		r := max(h.Distance(t, i), 0.3)
		at := math.Pow(10, t.Level/20)
		rec := h.room(s.Room)
		delay := int(r / soundSpeed * float64(rate))
		var hresp []float64
		diffuse := at * 0.7 / src.criticalDistance() // the voice's mean over all directions: about 3 dB under its front
		if s.Room == t.Room {
			direct := at * facingGain(h, t, i) / r // the back of the head: 8 dB down
			hresp = tailResponse(rng, rate, rec.RT60, diffuse, delay+int(0.004*float64(rate)))
			hresp[delay] += direct
		} else {
			hresp = tailResponse(rng, rate, rec.RT60, diffuse*math.Pow(10, -tl/20), delay+int(0.01*float64(rate)))
		}
		y := convolve(x, hresp)
		g := math.Pow(10, s.Gain/20)
		noise := math.Sqrt(power(rec.Noise) + power(s.Noise))
		if h.Quiet {
			noise = 0
		}
		mic := make([]int16, n)
		for j := range y {
			mic[j] = toS16(g * (y[j] + noise*rng.NormFloat64()))
		}
		out[i] = mic
	}
	return out
}

// power is a dBFS level's power (0 for 0: none).
func power(dbfs float64) float64 {
	if dbfs == 0 {
		return 0
	}
	return math.Pow(10, dbfs/10)
}

// tailResponse is a diffuse tail of RMS amplitude rms (its energy, as a
// sum of squares, is rms²) decaying by 60 dB over rt60, from sample start.
func tailResponse(rng *rand.Rand, rate int, rt60 time.Duration, rms float64, start int) []float64 {
	n := max(int(rt60.Seconds()*float64(rate)), 1)
	h := make([]float64, start+n)
	tau := max(rt60.Seconds(), 0.05) / math.Log(1000)
	var e float64
	for i := range n {
		v := rng.NormFloat64() * math.Exp(-float64(i)/float64(rate)/tau)
		h[start+i] = v
		e += v * v
	}
	for i := start; i < len(h); i++ {
		h[i] *= rms / math.Sqrt(e)
	}
	return h
}
