package echoroom

import "math"

// Measures of a capture path's result, for tests and benchmarks.

// ERLE is the echo return loss enhancement in dB: the energy of the
// microphone signal mic over that of the processed signal out, from sample
// skip on (to leave the canceller time to converge). Both carry echo only
// (and the room's noise), no near speech.
func ERLE(mic, out []int16, skip int) float64 {
	n := min(len(mic), len(out))
	if skip >= n {
		return math.NaN()
	}
	return 10 * math.Log10(energy(mic[skip:n])/math.Max(energy(out[skip:n]), 1e-9))
}

// Correlation is the normalised cross-correlation of out with the clean
// near speech over [from, to), at the best lag within ±maxLag samples: 1
// means the near speech came through unchanged (up to gain) and nothing
// else did.
func Correlation(out, near []int16, from, to, maxLag int) (best float64, lag int) {
	to = min(to, len(out), len(near))
	best = math.Inf(-1)
	for l := -maxLag; l <= maxLag; l++ {
		var sab, saa, sbb float64
		for i := from; i < to; i++ {
			j := i + l
			if j < 0 || j >= len(out) {
				continue
			}
			x, y := float64(near[i]), float64(out[j])
			sab += x * y
			saa += x * x
			sbb += y * y
		}
		if saa == 0 || sbb == 0 {
			continue
		}
		if c := sab / math.Sqrt(saa*sbb); c > best {
			best, lag = c, l
		}
	}
	return best, lag
}

// SNR is the signal-to-noise ratio of x in dB, given which 10 ms frames hold
// speech (speech[i] for frame i): the power of the speech frames less the
// noise power, over the power of the frames without speech. It is measured
// the same way before and after a noise suppressor, whose gain is the
// difference.
func SNR(x []int16, speech []bool, frame int) float64 {
	var ps, pn float64
	var ns, nn int
	for i, sp := range speech {
		if (i+1)*frame > len(x) {
			break
		}
		e := energy(x[i*frame : (i+1)*frame])
		if sp {
			ps, ns = ps+e, ns+1
		} else {
			pn, nn = pn+e, nn+1
		}
	}
	if ns == 0 || nn == 0 {
		return math.NaN()
	}
	ps, pn = ps/float64(ns), pn/float64(nn)
	return 10 * math.Log10(math.Max(ps-pn, 1e-9)/math.Max(pn, 1e-9))
}

// Active marks the frames of clean where it is within floorDB of its
// loudest frame, as speech (for SNR).
func Active(clean []int16, frame int, floorDB float64) []bool {
	n := len(clean) / frame
	e := make([]float64, n)
	var peak float64
	for i := range e {
		e[i] = energy(clean[i*frame : (i+1)*frame])
		peak = math.Max(peak, e[i])
	}
	th := peak * math.Pow(10, floorDB/10)
	out := make([]bool, n)
	for i := range e {
		out[i] = e[i] > th && e[i] > 0
	}
	return out
}

func energy(x []int16) float64 {
	var s float64
	for _, v := range x {
		f := float64(v)
		s += f * f
	}
	return s
}
