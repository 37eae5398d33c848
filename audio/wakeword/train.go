package wakeword

import (
	"errors"
	"fmt"
	"math"
)

// TrainOptions are the verifier's training settings; zero values take
// the defaults.
type TrainOptions struct {
	Candidate, Threshold float64
	// Lambda is the L2 penalty on the standardized weights (DefaultLambda).
	Lambda float64
	// Iterations of the gradient descent (300).
	Iterations int
}

// DefaultLambda: a handful of takes must not be learnt by heart (0.003
// to 0.1 measured on espeak-ng voices: 0.03 kept the phrase at 0.95 and
// over and took most near misses under 0.9).
const DefaultLambda = 0.03

// TrainVerifier fits a verifier to windows of the phrase (pos) and of
// everything else (neg), each Window×96 values: logistic regression on
// standardized values, the two classes weighted alike, by Nesterov's
// accelerated gradient descent. Deterministic.
func TrainVerifier(pos, neg [][]float32, o TrainOptions) (*Verifier, error) {
	if len(pos) == 0 || len(neg) == 0 {
		return nil, errors.New("no windows to train on")
	}
	if o.Candidate == 0 {
		o.Candidate = DefaultCandidate
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultVerifierThreshold
	}
	if o.Lambda == 0 {
		o.Lambda = DefaultLambda
	}
	if o.Iterations == 0 {
		o.Iterations = 300
	}
	d := len(pos[0])
	x := make([][]float32, 0, len(pos)+len(neg))
	for _, w := range append(append([][]float32(nil), pos...), neg...) {
		if len(w) != d {
			return nil, fmt.Errorf("windows of %d and %d values", d, len(w))
		}
		x = append(x, w)
	}
	n := len(x)
	y := make([]float64, n)
	wt := make([]float64, n) // each class weighs half
	for i := range x {
		if i < len(pos) {
			y[i], wt[i] = 1, 0.5/float64(len(pos))
		} else {
			wt[i] = 0.5 / float64(len(neg))
		}
	}
	mean, sd := make([]float64, d), make([]float64, d)
	for _, w := range x {
		for j, v := range w {
			mean[j] += float64(v) / float64(n)
		}
	}
	for _, w := range x {
		for j, v := range w {
			e := float64(v) - mean[j]
			sd[j] += e * e / float64(n)
		}
	}
	for j := range sd {
		if sd[j] = math.Sqrt(sd[j]); sd[j] < 1e-6 {
			sd[j] = 1
		}
	}
	z := make([][]float64, n)
	for i, w := range x {
		z[i] = make([]float64, d)
		for j, v := range w {
			z[i][j] = (float64(v) - mean[j]) / sd[j]
		}
	}
	// The step: 1/L, L bounding the loss's curvature: 1/4 of the largest
	// eigenvalue of Σ wt·z zᵀ (power iteration) plus lambda.
	u := make([]float64, d)
	for j := range u {
		u[j] = 1 / math.Sqrt(float64(d))
	}
	eig := 0.0
	for it := 0; it < 30; it++ {
		next := make([]float64, d)
		for i, zi := range z {
			s := wt[i] * dot(zi, u)
			for j, v := range zi {
				next[j] += s * v
			}
		}
		norm := math.Sqrt(dot(next, next))
		if norm == 0 {
			break
		}
		eig = norm
		for j := range u {
			u[j] = next[j] / norm
		}
	}
	lr := 1 / (eig/4 + o.Lambda + 1e-9)
	beta, prev := make([]float64, d+1), make([]float64, d+1) // the last is the bias
	look, grad := make([]float64, d+1), make([]float64, d+1)
	for it := 1; it <= o.Iterations; it++ {
		mom := float64(it-1) / float64(it+2)
		for j := range look {
			look[j] = beta[j] + mom*(beta[j]-prev[j])
		}
		clear(grad)
		for i, zi := range z {
			p := 1 / (1 + math.Exp(-(dot(zi, look[:d]) + look[d])))
			g := wt[i] * (p - y[i])
			for j, v := range zi {
				grad[j] += g * v
			}
			grad[d] += g
		}
		for j := 0; j < d; j++ {
			grad[j] += o.Lambda * look[j]
		}
		copy(prev, beta)
		for j := range beta {
			beta[j] = look[j] - lr*grad[j]
		}
	}
	// Over the raw values: w = beta/sd, bias = b - Σ beta·mean/sd.
	v := &Verifier{Version: VerifierVersion, Candidate: o.Candidate, Threshold: o.Threshold, Window: d / embedSize,
		Weights: make([]float32, d), Bias: beta[d]}
	for j := 0; j < d; j++ {
		w := beta[j] / sd[j]
		v.Weights[j] = float32(w)
		v.Bias -= w * mean[j]
	}
	return v, nil
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
