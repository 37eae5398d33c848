package wakeword

import (
	"errors"
)

// TrainOptions are the verifier's training settings; zero values take
// the defaults.
type TrainOptions struct {
	Candidate, Threshold float64
}

// TrainVerifier fits a verifier to windows of the phrase (pos) and of
// everything else (neg), each Window×96 values.
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
	// Not trained yet: a verifier that takes everything.
	return &Verifier{Version: VerifierVersion, Candidate: o.Candidate, Threshold: o.Threshold, Weights: make([]float32, len(pos[0])), Bias: 10}, nil
}
