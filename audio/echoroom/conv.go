package echoroom

import (
	"math"
	"math/bits"
	"math/cmplx"
)

// convolve returns x convolved with h, as long as x (overlap-add by FFT,
// so that long impulse responses over long signals stay cheap).
func convolve(x, h []float64) []float64 {
	out := make([]float64, len(x))
	if len(h) == 0 || len(x) == 0 {
		return out
	}
	n := 1
	for n < 2*len(h) {
		n <<= 1
	}
	n = max(n, 4096)
	block := n - len(h) + 1
	f := newFFT(n)
	hf := make([]complex128, n)
	for i, v := range h {
		hf[i] = complex(v, 0)
	}
	f.transform(hf, false)
	buf := make([]complex128, n)
	for start := 0; start < len(x); start += block {
		clear(buf)
		for i := 0; i < block && start+i < len(x); i++ {
			buf[i] = complex(x[start+i], 0)
		}
		f.transform(buf, false)
		for i := range buf {
			buf[i] *= hf[i]
		}
		f.transform(buf, true)
		for i := 0; i < n && start+i < len(out); i++ {
			out[start+i] += real(buf[i]) / float64(n)
		}
	}
	return out
}

// fft is an in-place radix-2 complex FFT of a fixed power-of-two size.
type fft struct {
	n   int
	tw  []complex128
	rev []int
}

func newFFT(n int) *fft {
	f := &fft{n: n, tw: make([]complex128, n/2), rev: make([]int, n)}
	for i := range f.tw {
		f.tw[i] = cmplx.Exp(complex(0, -2*math.Pi*float64(i)/float64(n)))
	}
	lg := bits.TrailingZeros(uint(n))
	for i := range f.rev {
		f.rev[i] = int(bits.Reverse(uint(i)) >> (bits.UintSize - lg))
	}
	return f
}

// transform is the forward FFT, or the inverse without the 1/n scale.
func (f *fft) transform(x []complex128, inverse bool) {
	for i, j := range f.rev {
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= f.n; size <<= 1 {
		half, step := size/2, f.n/size
		for start := 0; start < f.n; start += size {
			for k := range half {
				w := f.tw[k*step]
				if inverse {
					w = cmplx.Conj(w)
				}
				t := w * x[start+k+half]
				x[start+k+half] = x[start+k] - t
				x[start+k] += t
			}
		}
	}
}
