package capture

import (
	"math"
	"math/cmplx"

	"github.com/agenthost/agenthost/audio/internal/fft"
)

// firstLook finds the echo's delay in the first second of sound played,
// before the delay search's filter has learnt the room (0.7–3.7 s with
// speech): the generalized cross-correlation of the reference and the
// microphone with the phase transform (GCC-PHAT), over the last 1.5 s.
// Whitened, the direct path stands out as a sharp peak even in a
// reverberant room; a microphone without the echo, or one whose path is
// changing, gives none; nor does a peak at the end of the range (a tune
// repeating itself). It looks in the canceller's first 6 s of sound: a near
// talker as loud as the echo can keep a sure peak from it for the first 3.
type firstLook struct {
	rate, maxLag int       // decimated
	far, mic     []float64 // the last firstLen (of bufFar and bufMic)
	bufFar       []float64
	bufMic       []float64
	seen         int // samples taken
	ft           *fft.FFT
	x, y         []complex128
	r            []float64
	acc          []float64 // r summed over the looks
	looks        int
	cand, held   int
	fresh        int // samples of the microphone taken since it started (again)
}

const (
	firstLen      = 1.5  // s: the stretch it looks over
	firstGiveUp   = 6    // s: how long it looks, at most
	firstEarly    = 3    // s: what it finds before, within the filter's window, corrects the first delay
	firstSound    = 0.3  // s of sound played before it looks
	firstFresh    = 0.3  // s of the microphone taken (since it looks again) before it looks
	firstPeak     = 8.0  // the peak this many times the correlation's RMS over the lags
	firstHold     = 2    // looks in a row the peak must hold
	firstEdge     = 10   // ms: a peak this near the end of the range is none
	firstVotes    = 6    // looks summed before the sum is looked at
	firstVotePeak = 6.0  // and its peak this many times its RMS
	firstLo       = 300  // Hz: the band looked at (the loudspeaker's high-pass,
	firstHi       = 1600 // and the decimator's low-pass)
)

func newFirstLook(rate, maxLag int) *firstLook {
	n := int(firstLen * float64(rate))
	f := &firstLook{rate: rate, maxLag: maxLag, ft: fft.New(2 * n)}
	f.x = make([]complex128, f.ft.N())
	f.y = make([]complex128, f.ft.N())
	f.r = make([]float64, maxLag+1)
	f.acc = make([]float64, maxLag+1)
	return f
}

// add takes one decimated frame of reference and microphone.
func (f *firstLook) add(far, mic []int16) {
	// far and mic are the last firstLen of bufFar and bufMic, which grow
	// to twice that before their last firstLen move to their start (it is
	// fed for good, after the first seconds too: a copy a frame would cost
	// more than the look).
	n := int(firstLen * float64(f.rate))
	if len(f.bufFar)+len(far) > 2*n {
		k := len(f.bufFar) - n
		f.bufFar = append(f.bufFar[:0], f.bufFar[k:]...)
		f.bufMic = append(f.bufMic[:0], f.bufMic[k:]...)
	}
	f.seen += len(far)
	f.fresh += len(mic)
	for i, v := range far {
		f.bufFar = append(f.bufFar, float64(v))
		f.bufMic = append(f.bufMic, float64(mic[i]))
	}
	from := max(0, len(f.bufFar)-n)
	f.far, f.mic = f.bufFar[from:], f.bufMic[from:]
}

// again starts looking again (the echo path changed): over the reference
// it holds, and of the microphone the last keep samples only (the echo
// before them took another path).
func (f *firstLook) again(keep int) {
	for i := range max(0, len(f.mic)-keep) {
		f.mic[i] = 0
	}
	f.seen, f.fresh = 0, min(keep, len(f.mic))
	f.looks, f.cand, f.held = 0, 0, 0
	clear(f.acc)
}

// done reports whether it has looked long enough: the filter's search
// finds what it did not.
func (f *firstLook) done() bool { return f.seen >= firstGiveUp*f.rate }

// early reports whether it has looked for less than firstEarly.
func (f *firstLook) early() bool { return f.seen < firstEarly*f.rate }

// look returns the delay (decimated samples) once a peak stood out for
// firstHold looks in a row.
func (f *firstLook) look() (int, bool) {
	loud := 0
	for _, v := range f.far {
		if math.Abs(v) > 100 {
			loud++
		}
	}
	if len(f.far) < f.maxLag+f.rate/4 || loud < int(firstSound*float64(f.rate)) || f.fresh < int(firstFresh*float64(f.rate)) {
		f.held = 0
		return 0, false
	}
	clear(f.x)
	clear(f.y)
	// The microphone from maxLag on only: every lag looked at overlaps the
	// reference fully (else a tune's repeats favour the shortest lag).
	for i := range f.far {
		f.x[i] = complex(f.far[i], 0)
		if i >= f.maxLag {
			f.y[i] = complex(f.mic[i], 0)
		}
	}
	f.ft.Forward(f.x)
	f.ft.Forward(f.y)
	n := f.ft.N()
	lo, hi := firstLo*n/f.rate, firstHi*n/f.rate
	for k := range f.y {
		kk := k
		if k > n/2 {
			kk = n - k
		}
		c := f.y[k] * cmplx.Conj(f.x[k])
		if a := cmplx.Abs(c); kk >= lo && kk <= hi && a > 0 {
			f.y[k] = c / complex(a, 0)
		} else {
			f.y[k] = 0
		}
	}
	f.ft.Inverse(f.y)
	for i := range f.r {
		f.r[i] = math.Abs(real(f.y[i]))
	}
	f.looks++
	for i, v := range f.r {
		f.acc[i] += v
	}
	onset, ok := f.pick(f.r, firstPeak)
	if !ok {
		f.held = 0
		return 0, false
	}
	if abs(onset-f.cand) <= delaySlack {
		f.held++
	} else {
		f.cand, f.held = onset, 1
	}
	return f.cand, f.held >= firstHold
}

// voted returns the delay (decimated samples) the correlations summed over
// every look so far give, once they stand out: a tune that repeats itself
// at nearly the echo's delay gives a rival peak at the repeat in some
// looks, the echo's stays in every one.
func (f *firstLook) voted() (int, bool) {
	if f.looks < firstVotes {
		return 0, false
	}
	return f.pick(f.acc, firstVotePeak)
}

// pick finds the direct path in a correlation r over the lags: the first
// lag at delayOnset of the peak or more, at most delayEarly before it,
// once the peak is peakRMS times r's RMS, is not at the end of the range
// and has no rival.
func (f *firstLook) pick(r []float64, peakRMS float64) (int, bool) {
	var peak, ms float64
	at := 0
	for i, v := range r {
		ms += v * v
		if v > peak {
			peak, at = v, i
		}
	}
	rms := math.Sqrt(ms / float64(len(r)))
	if peak == 0 || peak < peakRMS*rms || at <= 1 || at >= len(r)-firstEdge*f.rate/1000 {
		// No peak, or one at either end of the range: sustained music
		// (no echo comes with no delay), the edge of the stretch looked
		// at, or a tune's repeat from beyond it.
		return 0, false
	}
	near := delayEarly * f.rate / 1000
	for i, v := range r {
		if (i < at-near || i > at+near) && v >= delayRival*peak {
			return 0, false
		}
	}
	for i := max(0, at-near); i < at; i++ {
		if r[i] >= delayOnset*peak {
			return i, true
		}
	}
	return at, true
}
