package capture

import (
	"fmt"
	"math"
)

// delayEstimator finds when the echo's direct path reaches the microphone,
// after the reference, however long the path through the devices is; the
// canceller's filter can then be short (and converge fast).
//
// A second speexdsp MDF filter, long enough for the whole search range,
// learns the path from speaker to microphone at about 4 kHz (both signals
// low-passed alike and decimated); the direct path is the first tap of its
// impulse response at half the largest or more. (The largest is often a
// reflection; and matching envelopes, as WebRTC's older estimator does,
// finds the echo's smeared middle in a reverberant room, 10–50 ms after
// its start.) An estimate is given once it held for a while and the peak
// stands out of the response.
type delayEstimator struct {
	dec        int // decimation factor
	rate       int // the search's rate
	aec        *speexEcho
	lpFar      *decimator
	lpMic      *decimator
	far, mic   []int16 // one decimated frame
	out        []int16
	h          []int32
	frames     int
	cand, held int // the onset leading (decimated samples) and for how many looks
	est        int // full-rate samples
	ok         bool
	first      *firstLook // GCC-PHAT, over the first seconds (and after the echo path changed)
	recent     *firstLook // the same, fed after it is done: the last seconds for a look again
	voted      bool       // the first look's sum corrected the filter
	again      bool       // looking again after the echo path changed: what the first look finds is taken
}

const (
	delayRate  = 4000 // the search's rate, about
	delayLook  = 5    // frames between looks at the impulse response
	delayHold  = 4    // looks the same onset must lead before it is taken
	delayMove  = 8    // and before an estimate already given changes
	delayRival = 0.6  // no other tap this large more than delayEarly from the peak
	delayEarly = 30   // ms: how long before the peak the direct path may arrive
	delayOnset = 0.5  // the direct path: the first tap at this share of the peak
	delaySlack = 1    // decimated samples an onset may wander and still hold
	delayExtra = 60   // ms the filter reaches past the search range (the speaker's own response)
)

// newDelayEstimator returns an estimator over lags 0…maxLag samples of
// frames of frame samples at rate.
func newDelayEstimator(frame, rate, maxLag int) (*delayEstimator, error) {
	dec := 1
	for k := max(1, rate/delayRate); k >= 1; k-- {
		if frame%k == 0 {
			dec = k
			break
		}
	}
	df := frame / dec
	taps := (maxLag + rate*delayExtra/1000 + dec - 1) / dec
	aec, err := newSpeexEcho(df, taps, rate/dec)
	if err != nil {
		return nil, fmt.Errorf("delay search: %w", err)
	}
	d := &delayEstimator{
		dec: dec, rate: rate / dec, aec: aec, lpFar: newDecimator(dec), lpMic: newDecimator(dec),
		far: make([]int16, df), mic: make([]int16, df), out: make([]int16, df),
		first: newFirstLook(rate/dec, maxLag/dec),
	}
	d.recent = d.first
	return d, nil
}

// relook starts looking again after the echo path changed (the output
// device or its buffering may have moved the echo by tens of ms), keep
// samples (full rate) ago: the first look looks again, over the reference
// it holds and the microphone since the change, and what it finds is taken
// at once, as at the start (the estimate stays meanwhile). The filter,
// having learnt the old path, adapts as slowly as in double talk: it found
// a bulk delay moved by 70 ms 5 s later with speech, not in 20 s with
// music. If the first look finds the echo elsewhere, the filter starts
// again from nothing, and its onsets wait until the first look is done, as
// at the start.
func (d *delayEstimator) relook(keep int) {
	d.recent.again(keep / d.dec)
	d.first = d.recent
	d.cand, d.held, d.voted, d.again = 0, 0, false, true
}

// foundAgain takes the first look's delay (decimated) after the echo path
// changed.
func (d *delayEstimator) foundAgain(lag int) {
	if abs(lag-d.est/d.dec) > delaySlack {
		d.aec.reset()
		d.voted = true
	}
	d.cand, d.held, d.est, d.again = lag, 0, lag*d.dec, false
}

// looking reports whether the search looks again after the echo path
// changed and has not yet found the echo.
func (d *delayEstimator) looking() bool { return d.again }

// add takes one frame of reference and of microphone (the same 10 ms) and
// returns the estimated delay in samples and whether there is one yet.
func (d *delayEstimator) add(far, near []int16) (int, bool) {
	d.lpFar.run(far, d.far)
	d.lpMic.run(near, d.mic)
	d.aec.cancel(d.mic, d.far, d.out)
	d.frames++
	d.recent.add(d.far, d.mic)
	if d.frames%delayLook != 0 {
		return d.est, d.ok
	}
	if d.first != nil {
		switch gcc, sure := d.first.look(); {
		case sure && d.again:
			d.foundAgain(gcc)
		case sure && !d.ok:
			// Taken as the filter's own estimate: the filter must lead
			// with another for delayMove looks to change it.
			d.cand, d.held, d.est, d.ok = gcc, 0, gcc*d.dec, true
		}
		if v, sure := d.first.voted(); sure && d.ok && abs(v-d.est/d.dec) > delayEarly*d.rate/1000 {
			// The filter took something else for the echo (a tune's
			// repeat): the first look's sum over its looks prevails, and
			// the filter's onsets wait until it is done.
			if d.again {
				d.foundAgain(v)
			}
			d.cand, d.held, d.est = v, 0, v*d.dec
			d.voted = true
		}
		if d.first.done() {
			d.first, d.again = nil, false
		}
	}
	if d.voted && d.first != nil || d.again {
		// (Looking again, the filter learns from nothing: its first
		// onsets wait for the first look.)
		return d.est, d.ok
	}
	onset, ok := d.onset()
	if !ok {
		return d.est, d.ok
	}
	if abs(onset-d.cand) <= delaySlack {
		d.held++
	} else {
		d.cand, d.held = onset, 0
	}
	need := delayHold
	if d.ok {
		need = delayMove
	}
	if d.held >= need {
		d.est, d.ok = d.cand*d.dec, true
	}
	return d.est, d.ok
}

// onset finds the direct path in the filter's impulse response: the first
// tap at delayOnset of the peak or more, at most delayEarly before it (the
// direct path precedes the early reflections by no more). There is none
// while the response has another peak as large as delayRival of it further
// away (the filter has not yet told the echo's lag from others: the far
// end repeats itself, as music does, or it is still learning).
func (d *delayEstimator) onset() (int, bool) {
	d.h = d.aec.impulseResponse(d.h)
	peak, at := 0.0, 0
	for i, v := range d.h {
		if a := math.Abs(float64(v)); a > peak {
			peak, at = a, i
		}
	}
	if peak == 0 || at <= 1 {
		// A response peaking at its first taps is no echo's: sustained
		// music gives one for seconds.
		return 0, false
	}
	near := delayEarly * d.rate / 1000
	for i, v := range d.h {
		if (i < at-near || i > at+near) && math.Abs(float64(v)) >= delayRival*peak {
			return 0, false
		}
	}
	for i := max(0, at-near); i < at; i++ {
		if math.Abs(float64(d.h[i])) >= delayOnset*peak {
			return i, true
		}
	}
	return at, true
}

func (d *delayEstimator) close() { d.aec.close() }

func abs(x int) int { return max(x, -x) }

// decimator low-passes a signal (a windowed sinc at 0.8 of the new
// Nyquist frequency) and keeps one sample in dec. Its delay is the same for
// every signal, so two decimated alike keep their lag.
type decimator struct {
	dec  int
	taps []float64
	hist []float64 // the last len(taps) samples, a ring
	pos  int
	n    int
}

func newDecimator(dec int) *decimator {
	d := &decimator{dec: dec}
	if dec == 1 {
		return d
	}
	n := 8*dec + 1
	fc := 0.8 / float64(2*dec) // of the input's rate
	var sum float64
	for i := range n {
		x := float64(i - n/2)
		v := 2 * fc
		if x != 0 {
			v = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		v *= 0.54 - 0.46*math.Cos(2*math.Pi*float64(i)/float64(n-1))
		d.taps = append(d.taps, v)
		sum += v
	}
	for i := range d.taps {
		d.taps[i] /= sum
	}
	d.hist = make([]float64, n)
	return d
}

// run decimates x into out (len(x)/dec samples).
func (d *decimator) run(x, out []int16) {
	if d.dec == 1 {
		copy(out, x)
		return
	}
	k := 0
	for _, v := range x {
		d.hist[d.pos] = float64(v)
		d.pos = (d.pos + 1) % len(d.hist)
		d.n++
		if d.n%d.dec != 0 || k >= len(out) {
			continue
		}
		var y float64
		for i, c := range d.taps {
			y += c * d.hist[(d.pos+i)%len(d.hist)]
		}
		out[k] = int16(max(-32768, min(32767, math.Round(y))))
		k++
	}
}
