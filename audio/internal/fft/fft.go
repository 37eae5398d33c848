// Package fft is an in-place radix-2 complex FFT of a fixed power-of-two
// size, shared by the capture chain's delay search and the echo room's
// convolution.
package fft

import (
	"math"
	"math/bits"
	"math/cmplx"
)

// FFT transforms slices of N() values in place.
type FFT struct {
	n   int
	tw  []complex128
	rev []int
}

// New makes an FFT of the smallest power of two of at least atLeast values.
func New(atLeast int) *FFT {
	n := 1
	for n < atLeast {
		n <<= 1
	}
	f := &FFT{n: n, tw: make([]complex128, n/2), rev: make([]int, n)}
	for i := range f.tw {
		f.tw[i] = cmplx.Exp(complex(0, -2*math.Pi*float64(i)/float64(n)))
	}
	lg := bits.TrailingZeros(uint(n))
	for i := range f.rev {
		f.rev[i] = int(bits.Reverse(uint(i)) >> (bits.UintSize - lg))
	}
	return f
}

// N is the transform's size.
func (f *FFT) N() int { return f.n }

// Forward is the forward transform of x (len N()).
func (f *FFT) Forward(x []complex128) { f.transform(x, false) }

// Inverse is the inverse transform of x (len N()), without the 1/N scale.
func (f *FFT) Inverse(x []complex128) { f.transform(x, true) }

func (f *FFT) transform(x []complex128, inverse bool) {
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
