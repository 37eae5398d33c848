package fft

import (
	"math"
	"math/cmplx"
	"testing"
)

// TestForwardIsTheDFTAndInverseUndoesIt against the DFT's definition.
func TestForwardIsTheDFTAndInverseUndoesIt(t *testing.T) {
	f := New(12)
	if f.N() != 16 {
		t.Fatalf("N = %d, want 16", f.N())
	}
	x := make([]complex128, f.N())
	for i := range x {
		x[i] = complex(math.Sin(float64(i)*0.7)+float64(i%3), float64(i%5)-2)
	}
	want := make([]complex128, len(x))
	for k := range want {
		for n, v := range x {
			want[k] += v * cmplx.Exp(complex(0, -2*math.Pi*float64(k*n)/float64(len(x))))
		}
	}
	y := append([]complex128(nil), x...)
	f.Forward(y)
	for k := range y {
		if cmplx.Abs(y[k]-want[k]) > 1e-9 {
			t.Fatalf("X[%d] = %v, want %v", k, y[k], want[k])
		}
	}
	f.Inverse(y)
	for i := range y {
		if got := y[i] / complex(float64(f.N()), 0); cmplx.Abs(got-x[i]) > 1e-9 {
			t.Fatalf("inverse[%d] = %v, want %v", i, got, x[i])
		}
	}
}
