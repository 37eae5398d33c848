package capture

import (
	"math"
	"math/bits"
	"slices"

	"github.com/agenthost/agenthost/audio/internal/fft"
)

// delayEstimator finds how far the echo in the microphone lags the
// reference, in whole frames, the way WebRTC's delay estimator does: each
// frame's spectrum becomes 32 bits (is a band louder than its running
// mean?), and for every candidate lag a smoothed count of the bits in which
// the microphone differs from the reference that far back is kept; the lag
// with the fewest differences, when it stands out and holds, is the delay.
// It lets the canceller's filter be short (and so converge fast) however
// long the path through the devices is.
type delayEstimator struct {
	lags  int // candidate lags 0 … lags-1 frames
	spec  spectrum
	far   []uint32  // far bits, a ring by frame
	farOn []bool    // whether the far frame had sound
	cost  []float64 // per lag
	t     int

	cand, held int // the lag leading now, and for how many updates
	updates    int
	est        int
	ok         bool
}

const (
	delayBands    = 32
	delaySmooth   = 0.03 // weight of a new frame in a lag's cost
	delayHold     = 20   // updates a new lag must lead before it is taken
	delayWarm     = 40   // updates before the first estimate
	delayContrast = 0.8  // the best cost must be below this share of the median
)

func newDelayEstimator(frame, lags int) *delayEstimator {
	d := &delayEstimator{lags: max(1, lags), spec: newSpectrum(frame)}
	d.far = make([]uint32, d.lags)
	d.farOn = make([]bool, d.lags)
	d.cost = make([]float64, d.lags)
	for i := range d.cost {
		d.cost[i] = delayBands / 2
	}
	return d
}

// add takes one frame of reference and of microphone (the same 10 ms) and
// returns the estimated lag in frames and whether there is one yet.
func (d *delayEstimator) add(far, near []int16) (int, bool) {
	fb, fon := d.spec.far.bits(far)
	nb, non := d.spec.near.bits(near)
	slot := d.t % d.lags
	d.far[slot], d.farOn[slot] = fb, fon
	d.t++
	if !non {
		return d.est, d.ok
	}
	updated := false
	for k := 0; k < d.lags && k < d.t; k++ {
		i := (slot - k + d.lags) % d.lags
		if !d.farOn[i] {
			continue
		}
		diff := float64(bits.OnesCount32(nb ^ d.far[i]))
		d.cost[k] += delaySmooth * (diff - d.cost[k])
		updated = true
	}
	if !updated {
		return d.est, d.ok
	}
	d.updates++
	best := 0
	for k, c := range d.cost {
		if c < d.cost[best] {
			best = k
		}
	}
	if best == d.cand {
		d.held++
	} else {
		d.cand, d.held = best, 0
	}
	if d.updates >= delayWarm && d.held >= delayHold && d.cost[best] < delayContrast*median(d.cost) {
		d.est, d.ok = best, true
	}
	return d.est, d.ok
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

// spectrum turns frames into band bits; far and near keep their own means.
type spectrum struct {
	far, near *bander
}

func newSpectrum(frame int) spectrum {
	f := fft.New(frame)
	return spectrum{far: newBander(f, frame), near: newBander(f, frame)}
}

// bander computes a frame's band energies and compares each with its mean.
type bander struct {
	fft   *fft.FFT
	buf   []complex128
	win   []float64
	bands [][2]int
	mean  []float64
	init  bool
}

func newBander(f *fft.FFT, frame int) *bander {
	b := &bander{fft: f, buf: make([]complex128, f.N()), win: make([]float64, frame), mean: make([]float64, delayBands)}
	for i := range b.win {
		b.win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(frame))
	}
	// Bins from about 1/32 to 1/2 of the spectrum (250 Hz … 4 kHz at 16 kHz).
	lo, hi := f.N()/64, f.N()/4
	for i := range delayBands {
		a := lo + (hi-lo)*i/delayBands
		z := lo + (hi-lo)*(i+1)/delayBands
		b.bands = append(b.bands, [2]int{a, max(z, a+1)})
	}
	return b
}

// bits returns the frame's band bits and whether it had sound at all.
func (b *bander) bits(x []int16) (uint32, bool) {
	var total float64
	for i := range b.buf {
		if i < len(x) {
			v := float64(x[i]) * b.win[i]
			b.buf[i] = complex(v, 0)
			total += v * v
		} else {
			b.buf[i] = 0
		}
	}
	if total < float64(len(x))*100 { // below about -50 dBFS: nothing to compare
		return 0, false
	}
	b.fft.Forward(b.buf)
	var out uint32
	for i, r := range b.bands {
		var e float64
		for k := r[0]; k < r[1]; k++ {
			e += real(b.buf[k])*real(b.buf[k]) + imag(b.buf[k])*imag(b.buf[k])
		}
		e = math.Log(e + 1)
		if !b.init {
			b.mean[i] = e
		}
		if e > b.mean[i] {
			out |= 1 << i
		}
		b.mean[i] += 0.02 * (e - b.mean[i])
	}
	b.init = true
	return out, true
}
