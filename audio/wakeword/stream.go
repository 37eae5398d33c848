// Package wakeword detects wake phrases in 16 kHz speech with openWakeWord's
// pre-trained models, following openWakeWord's reference streaming
// procedure: every 1,280 new samples, the mel model gets the last 1,760
// samples as float32 holding the raw int16 values (8 frames of 32 bands,
// scaled x/10 + 2, into a buffer that starts with 76 frames of ones); the
// embedding model gets the last 76 mel frames (96 values per 80 ms); each
// wake model scores the last 16 (or its own window of) embeddings.
//
// A stream may step more often than every 80 ms (Step: 640, 320 or 160
// samples): the mel frames stay on their 10 ms grid, an embedding is made
// every step, and a wake model still reads embeddings 80 ms apart (every
// Hop/Step-th one), so each step scores the reference procedure as if the
// stream had started that much later. Where the 80 ms grid falls in the
// speech then matters less, at the cost of one embedding and one score per
// model each step.
//
// The models run behind Runtime, so this package holds no native code: the
// ONNX Runtime binding is in package wakeword/ort and is linked only into
// the detector's own process (cmd/agenthost-wakeword). The pipe protocol
// between the host and that process is in protocol.go.
package wakeword

import (
	"fmt"
)

// Rate is the sample rate the models take.
const Rate = 16000

// The reference procedure's sizes.
const (
	Hop        = 1280 // the reference procedure's step (80 ms): embeddings a wake model reads are this far apart
	melFrame   = 160  // samples per mel frame (10 ms)
	melContext = 480  // older samples the mel model also sees
	melBands   = 32
	melWindow  = 76 // mel frames per embedding
	embedSize  = 96
)

// Runtime runs the three kinds of model.
type Runtime interface {
	// Mel turns samples (float32 holding int16 values) into frames of 32
	// mel bands, flattened.
	Mel(samples []float32) ([]float32, error)
	// Embed turns 76×32 mel values into 96 embedding values.
	Embed(mel []float32) ([]float32, error)
	// Score runs wake model i on its window of embeddings (Window(i)×96).
	Score(i int, emb []float32) (float32, error)
	// Window is how many embeddings wake model i reads.
	Window(i int) int
	// Models is the number of wake models.
	Models() int
}

// Score is one wake model's score at a stream position.
type Score struct {
	Model int
	Value float32
	// End is the stream position (in samples since the stream began) just
	// after the audio this score has heard.
	End int64
}

// Stream runs the procedure over one continuous stream.
type Stream struct {
	rt      Runtime
	raw     []float32 // melContext old samples, then the step's new ones
	n       int       // new samples in raw
	mel     []float32 // frames × melBands, at most melKeep frames
	emb     []float32 // embeddings × embedSize, at most embKeep
	ones    int       // mel frames of the initial ones still in mel
	pos     int64     // samples consumed
	embKeep int
	step    int       // new samples per step
	phases  int       // Hop / step: embeddings per 80 ms
	in      []float32 // a wake model's input, gathered
}

// NewStream returns a stream at position 0 that steps every Hop samples.
func NewStream(rt Runtime) *Stream {
	s, _ := NewStreamStep(rt, Hop)
	return s
}

// ValidStep reports whether step (samples) is one a stream can take: a
// whole number of mel frames that divides Hop.
func ValidStep(step int) error {
	if step < melFrame || step%melFrame != 0 || Hop%step != 0 {
		return fmt.Errorf("step %d samples: it must be 160, 320, 640 or 1280 (10, 20, 40 or 80 ms)", step)
	}
	return nil
}

// NewStreamStep returns a stream at position 0 that steps every step
// samples (see ValidStep).
func NewStreamStep(rt Runtime, step int) (*Stream, error) {
	if err := ValidStep(step); err != nil {
		return nil, err
	}
	keep := 16
	for i := 0; i < rt.Models(); i++ {
		keep = max(keep, rt.Window(i))
	}
	phases := Hop / step
	s := &Stream{rt: rt, embKeep: (keep-1)*phases + 1, step: step, phases: phases}
	s.Reset(0)
	return s, nil
}

// Step is the samples between scores.
func (s *Stream) Step() int { return s.step }

// Reset forgets the audio heard: the stream starts again at pos (after a
// gap in the audio).
func (s *Stream) Reset(pos int64) {
	s.raw = make([]float32, melContext+s.step)
	s.n = 0
	s.mel = s.mel[:0]
	for i := 0; i < melWindow*melBands; i++ {
		s.mel = append(s.mel, 1)
	}
	s.emb = s.emb[:0]
	s.ones = melWindow
	s.pos = pos
}

// Pos is the stream position: samples consumed since the stream began.
func (s *Stream) Pos() int64 { return s.pos }

// Feed takes samples and returns the scores of every step they complete
// (each model's, in order), appended to out.
func (s *Stream) Feed(pcm []int16, out []Score) ([]Score, error) {
	for len(pcm) > 0 {
		k := min(s.step-s.n, len(pcm))
		dst := s.raw[melContext+s.n:]
		for i, v := range pcm[:k] {
			dst[i] = float32(v)
		}
		s.n += k
		s.pos += int64(k)
		pcm = pcm[k:]
		if s.n < s.step {
			break
		}
		var err error
		if out, err = s.run(out); err != nil {
			return out, err
		}
		copy(s.raw, s.raw[s.step:])
		s.n = 0
	}
	return out, nil
}

func (s *Stream) run(out []Score) ([]Score, error) {
	frames, err := s.rt.Mel(s.raw)
	if err != nil {
		return out, fmt.Errorf("mel model: %w", err)
	}
	if len(frames)%melBands != 0 || len(frames) == 0 {
		return out, fmt.Errorf("mel model: %d values are not whole frames of %d bands", len(frames), melBands)
	}
	for _, v := range frames {
		s.mel = append(s.mel, v/10+2)
	}
	if extra := len(s.mel) - melWindow*melBands; extra > 0 {
		s.mel = append(s.mel[:0], s.mel[extra:]...)
	}
	// Embeddings of the initial ones are noise (a stream that starts in
	// noise would score high for a second): none is kept until they are
	// gone, so the first score comes after about 2 s of audio.
	if s.ones = max(0, s.ones-len(frames)/melBands); s.ones > 0 {
		return out, nil
	}
	e, err := s.rt.Embed(s.mel)
	if err != nil {
		return out, fmt.Errorf("embedding model: %w", err)
	}
	if len(e) != embedSize {
		return out, fmt.Errorf("embedding model: %d values, want %d", len(e), embedSize)
	}
	s.emb = append(s.emb, e...)
	if extra := len(s.emb) - s.embKeep*embedSize; extra > 0 {
		s.emb = append(s.emb[:0], s.emb[extra:]...)
	}
	have := len(s.emb) / embedSize
	for i := 0; i < s.rt.Models(); i++ {
		w := s.rt.Window(i)
		if have < (w-1)*s.phases+1 {
			continue
		}
		in := s.emb[len(s.emb)-w*embedSize:]
		if s.phases > 1 {
			// Every phases-th embedding, ending with the newest: 80 ms apart.
			s.in = s.in[:0]
			for k := have - 1 - (w-1)*s.phases; k < have; k += s.phases {
				s.in = append(s.in, s.emb[k*embedSize:(k+1)*embedSize]...)
			}
			in = s.in
		}
		v, err := s.rt.Score(i, in)
		if err != nil {
			return out, fmt.Errorf("wake model %d: %w", i, err)
		}
		out = append(out, Score{Model: i, Value: v, End: s.pos})
	}
	return out, nil
}
