package capture

import "math"

// How the canceller tells that the echo path changed under its filter, or
// that speexdsp started the filter again on its own (see filter).

// diverged reports whether the filter, once it had learnt the room, has
// for 200 ms taken less than 3 dB off the microphone while its output and
// its echo estimate (mic less output) were anticorrelated: the estimate
// holds an echo the microphone does not (the path changed). Near speech
// is uncorrelated with the estimate, and an echo taken off only in part
// leaves a positive correlation. (The correlation alone also dips for
// moments in double talk and at the ends of words; the run and the 3 dB
// keep those out on the tuning rooms.)
func (e *Echo) diverged(mic []int16) bool {
	var ey, ee, yy, dd float64
	for i, v := range e.out {
		x, y := float64(v), float64(mic[i])-float64(v)
		ey += x * y
		ee += x * x
		yy += y * y
		dd += float64(mic[i]) * float64(mic[i])
	}
	e.ey = divDecay*e.ey + ey
	e.ee = divDecay*e.ee + ee
	e.yy = divDecay*e.yy + yy
	e.dd = divDecay*e.dd + dd
	if e.held || e.yy < divFloor*float64(len(mic)) || e.ey > -divCorr*math.Sqrt(e.ee*e.yy) || e.dd > divERLE*e.ee {
		e.divRun = 0
		return false
	}
	e.divRun++
	if e.divRun < divRun {
		return false
	}
	e.divRun = 0
	e.ey, e.ee, e.yy, e.dd = 0, 0, 0, 0
	return true
}

// resetFilter starts the filter again from nothing.
func (e *Echo) resetFilter() {
	e.aec.reset()
	e.irE = 0
}

// slapped reports whether speexdsp reset its filter itself since the last
// look (every slapLook frames): the energy of the filter's impulse response
// fell by slapDrop or more, and the filter now takes less than 1 dB off mic.
// (speexdsp also copies the filter giving its output back into the one
// learning, which the impulse response is, when the latter does worse: the
// response may fall as much then, while the output does not change.) Not
// while the output is held: the filter learns then, and what it passes is
// held down anyway.
func (e *Echo) slapped(mic []int16) bool {
	if e.irLook--; e.irLook > 0 {
		return false
	}
	e.irLook = slapLook
	e.ir = e.aec.impulseResponse(e.ir)
	var en float64
	for _, v := range e.ir {
		en += float64(v) * float64(v)
	}
	was := e.irE
	e.irE = en
	return !e.held && was > 0 && en < slapDrop*was && energy(mic) < slapERLE*energy(e.out)
}

const (
	divDecay = 0.9  // per frame: about the last 100 ms count for a divergence
	divCorr  = 0.2  // the output and the echo estimate anticorrelated this much,
	divERLE  = 2.0  // the filter taking less than 3 dB off the microphone,
	divRun   = 20   // for this many frames in a row: diverged
	divFloor = 10.0 // mean square of the estimate (about −70 dBFS) below which it is not looked at

	slapLook = 10   // frames between looks at the filter for speexdsp's own reset
	slapDrop = 0.01 // its response's energy fell by 20 dB or more since the last,
	slapERLE = 1.26 // and the filter takes less than 1 dB off: reset
)
