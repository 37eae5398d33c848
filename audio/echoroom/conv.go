package echoroom

import "github.com/agenthost/agenthost/audio/internal/fft"

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
	f := fft.New(n)
	hf := make([]complex128, n)
	for i, v := range h {
		hf[i] = complex(v, 0)
	}
	f.Forward(hf)
	buf := make([]complex128, n)
	for start := 0; start < len(x); start += block {
		clear(buf)
		for i := 0; i < block && start+i < len(x); i++ {
			buf[i] = complex(x[start+i], 0)
		}
		f.Forward(buf)
		for i := range buf {
			buf[i] *= hf[i]
		}
		f.Inverse(buf)
		for i := 0; i < n && start+i < len(out); i++ {
			out[start+i] += real(buf[i]) / float64(n)
		}
	}
	return out
}
