// Package wakeword detects wake phrases in 16 kHz speech with openWakeWord's
// pre-trained models, following openWakeWord's reference streaming
// procedure: every 1,280 new samples, the mel model gets the last 1,760
// samples as float32 holding the raw int16 values (8 frames of 32 bands,
// scaled x/10 + 2, into a buffer that starts with 76 frames of ones); the
// embedding model gets the last 76 mel frames (96 values per 80 ms); each
// wake model scores the last 16 (or its own window of) embeddings.
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
	Hop        = 1280 // new samples per step (80 ms)
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
}

// NewStream returns a stream at position 0.
func NewStream(rt Runtime) *Stream {
	keep := 16
	for i := 0; i < rt.Models(); i++ {
		keep = max(keep, rt.Window(i))
	}
	s := &Stream{rt: rt, embKeep: keep}
	s.Reset(0)
	return s
}

// Reset forgets the audio heard: the stream starts again at pos (after a
// gap in the audio).
func (s *Stream) Reset(pos int64) {
	s.raw = make([]float32, melContext+Hop)
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
		k := min(Hop-s.n, len(pcm))
		dst := s.raw[melContext+s.n:]
		for i, v := range pcm[:k] {
			dst[i] = float32(v)
		}
		s.n += k
		s.pos += int64(k)
		pcm = pcm[k:]
		if s.n < Hop {
			break
		}
		var err error
		if out, err = s.step(out); err != nil {
			return out, err
		}
		copy(s.raw, s.raw[Hop:])
		s.n = 0
	}
	return out, nil
}

func (s *Stream) step(out []Score) ([]Score, error) {
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
		if have < w {
			continue
		}
		v, err := s.rt.Score(i, s.emb[len(s.emb)-w*embedSize:])
		if err != nil {
			return out, fmt.Errorf("wake model %d: %w", i, err)
		}
		out = append(out, Score{Model: i, Value: v, End: s.pos})
	}
	return out, nil
}
