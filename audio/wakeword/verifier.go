package wakeword

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// The owner's verifier (openWakeWord's "custom verifier"): a logistic
// regression on the window of embeddings a wake model scores, trained on a
// few recordings of the owner saying the phrase against other speech. It
// runs only on a step whose model score reaches Candidate, and then
// decides alone: a detection needs the verifier's probability at or over
// Threshold. Its cost is one dot product of Window×96 values per candidate
// step (1,536 multiply-adds for a 16-embedding model), next to nothing
// beside the embedding model that runs every step.

// VerifierVersion is the verifier file's format version.
const VerifierVersion = 1

// Defaults of a verifier's settings: the candidate score is
// openWakeWord's; a verifier trained on a few takes is sure of the phrase
// (0.95 and over) and less so of near misses (0.3–0.95), hence 0.9.
const (
	DefaultCandidate         = 0.1
	DefaultVerifierThreshold = 0.9
)

// The least a verifier file may ask for. The file lies in the service
// user's state folder, so whoever can write there could plant one whose
// bias takes every window; it may lower the model's bar to openWakeWord's
// candidate score and no further (the model scores a quiet room and noise
// far under it), and must be at least as sure as not of the owner.
const (
	MinCandidate         = DefaultCandidate
	MinVerifierThreshold = 0.5
)

// Verifier is the owner's verifier of one wake model, as stored.
type Verifier struct {
	Version int `json:"version"`
	// Model is the wake model's name (ModelName) it was trained for.
	Model string `json:"model"`
	// Window is the embeddings it reads (the model's window).
	Window int `json:"window"`
	// Candidate is the model score at or over which it is asked.
	Candidate float64 `json:"candidate"`
	// Threshold is its probability at or over which the model fires.
	Threshold float64 `json:"threshold"`
	// Weights (Window×96, over the raw embedding values) and Bias: the
	// probability is the logistic of Bias + Weights·window.
	Weights []float32 `json:"weights"`
	Bias    float64   `json:"bias"`
	// What it was trained on, for the owner to read.
	Phrases   int       `json:"phrases"`
	Negatives int       `json:"negatives"`
	Created   time.Time `json:"created"`
}

// VerifierFile is where the verifier of model is kept in dir (the
// daemon's is the state folder's wakeword/).
func VerifierFile(dir, model string) string {
	return filepath.Join(dir, model+".verifier.json")
}

// MaxVerifierSize bounds a verifier file (a 16-embedding one is ~25 KB).
const MaxVerifierSize = 1 << 20

// maxVerifierWindow bounds Window (openWakeWord's models read 16–32).
const maxVerifierWindow = 64

// Check reports what makes v unusable.
func (v *Verifier) Check() error {
	switch {
	case v.Version != VerifierVersion:
		return fmt.Errorf("format version %d; this build reads version %d (enroll again: agenthost wakeword enroll)", v.Version, VerifierVersion)
	case v.Model == "":
		return errors.New("no model named")
	case v.Window < 1 || v.Window > maxVerifierWindow:
		return fmt.Errorf("window of %d embeddings is outside 1…%d", v.Window, maxVerifierWindow)
	case len(v.Weights) != v.Window*embedSize:
		return fmt.Errorf("%d weights; a window of %d embeddings needs %d", len(v.Weights), v.Window, v.Window*embedSize)
	case !(v.Candidate >= MinCandidate && v.Candidate < 1):
		return fmt.Errorf("candidate score %g is outside [%g, 1): a verifier may not ask the model for less (enroll again: agenthost wakeword enroll)", v.Candidate, MinCandidate)
	case !(v.Threshold >= MinVerifierThreshold && v.Threshold < 1):
		return fmt.Errorf("threshold %g is outside [%g, 1) (enroll again: agenthost wakeword enroll)", v.Threshold, MinVerifierThreshold)
	case math.IsNaN(v.Bias) || math.IsInf(v.Bias, 0):
		return errors.New("the bias is not a number")
	}
	for i, w := range v.Weights {
		if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
			return fmt.Errorf("weight %d is not a number", i)
		}
	}
	return nil
}

// Prob is the verifier's probability that window (Window×96 embedding
// values, as the wake model reads them) is the owner saying the phrase.
func (v *Verifier) Prob(window []float32) float32 {
	z := v.Bias
	for i, w := range v.Weights[:min(len(v.Weights), len(window))] {
		z += float64(w) * float64(window[i])
	}
	return float32(1 / (1 + math.Exp(-z)))
}

// LoadVerifier reads and checks the verifier file at path. A missing file
// is (nil, nil). The error of a file that cannot serve says why.
func LoadVerifier(path string) (*Verifier, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the verifier %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxVerifierSize+1))
	if err != nil {
		return nil, fmt.Errorf("the verifier %s: %w", path, err)
	}
	v, err := ParseVerifier(b)
	if err != nil {
		return nil, fmt.Errorf("the verifier %s: %w", path, err)
	}
	return v, nil
}

// ParseVerifier decodes and checks a verifier file's content.
func ParseVerifier(b []byte) (*Verifier, error) {
	if len(b) > MaxVerifierSize {
		return nil, fmt.Errorf("larger than %d KiB: not a verifier", MaxVerifierSize>>10)
	}
	var v Verifier
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a verifier file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a verifier file: data after the document")
	}
	if err := v.Check(); err != nil {
		return nil, err
	}
	return &v, nil
}

// verifying runs the verifiers beside the wake models: it sees the window
// each model scores and, for a candidate score, asks the model's verifier.
// The stream is unchanged; its scores and the verdicts come in one order.
type verifying struct {
	Runtime
	v        []*Verifier // by model; nil: none
	verdicts []float32   // per Score call since the last reset: the probability, or -1 when not asked
}

func (r *verifying) Score(i int, emb []float32) (float32, error) {
	s, err := r.Runtime.Score(i, emb)
	if err != nil {
		return s, err
	}
	p := float32(-1)
	if i < len(r.v) && r.v[i] != nil && float64(s) >= r.v[i].Candidate {
		p = r.v[i].Prob(emb)
	}
	r.verdicts = append(r.verdicts, p)
	return s, nil
}

// Window is one step's score of a wake model and the embeddings it read.
type Window struct {
	Score float32
	End   int64     // the stream position after the audio heard
	Emb   []float32 // Window(model)×96 values
}

// recording keeps the windows a wake model scores.
type recording struct {
	Runtime
	s     *Stream
	model int
	keep  func(score float32, end int64) bool
	got   []Window
}

func (r *recording) Score(i int, emb []float32) (float32, error) {
	v, err := r.Runtime.Score(i, emb)
	if err == nil && i == r.model && (r.keep == nil || r.keep(v, r.s.Pos())) {
		r.got = append(r.got, Window{Score: v, End: r.s.Pos(), Emb: append([]float32(nil), emb...)})
	}
	return v, err
}

// Windows runs a fresh stream stepping every step samples over pcm and
// returns model's scores with their windows, those keep (nil: all) takes.
// A fresh stream scores from about 2 s in (see Stream): the gate's 2.2 s
// of context before a sound gives the scores of a stream that ran on.
func Windows(rt Runtime, model, step int, pcm []int16, keep func(score float32, end int64) bool) ([]Window, error) {
	r := &recording{Runtime: rt, model: model, keep: keep}
	s, err := NewStreamStep(r, step)
	if err != nil {
		return nil, err
	}
	r.s = s
	for i := 0; i < len(pcm); i += 960 {
		if _, err := s.Feed(pcm[i:min(i+960, len(pcm))], nil); err != nil {
			return nil, err
		}
	}
	return r.got, nil
}
