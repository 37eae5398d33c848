package wakeword

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// A Head is a wake model run in Go: a small network (dense layers, ReLU
// between them, a logistic at the end) over the window of embeddings a
// wake model reads, as openWakeWord's own heads are. agenthost trains its
// own (TrainHead; package wakeword/heads ships them) on embeddings of
// speech made here, so that a wake word needs no pre-trained model.
type Head struct {
	Window int // embeddings read (Window×96 values)
	Layers []Layer
}

// Layer is a dense layer: Out = W·In + B, W row-major (Out rows of In).
type Layer struct {
	In, Out int
	W, B    []float32
}

// Head files: a magic, a version, the window and the layers, little-endian.
const (
	headMagic   = "AHWH"
	HeadVersion = 1
	// maxHeadValues bounds a head file's weights (16 MB of float32).
	maxHeadValues = 4 << 20
)

// Check reports what makes h unusable.
func (h *Head) Check() error {
	if h.Window < 1 || h.Window > maxVerifierWindow {
		return fmt.Errorf("window of %d embeddings is outside 1…%d", h.Window, maxVerifierWindow)
	}
	if len(h.Layers) == 0 {
		return errors.New("no layer")
	}
	in := h.Window * embedSize
	for i, l := range h.Layers {
		if l.In != in {
			return fmt.Errorf("layer %d takes %d values; %d come in", i+1, l.In, in)
		}
		if l.Out < 1 || len(l.W) != l.In*l.Out || len(l.B) != l.Out {
			return fmt.Errorf("layer %d: %d weights and %d biases for %d×%d", i+1, len(l.W), len(l.B), l.Out, l.In)
		}
		for _, v := range append(l.W[:len(l.W):len(l.W)], l.B...) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("layer %d holds a value that is not a number", i+1)
			}
		}
		in = l.Out
	}
	if in != 1 {
		return fmt.Errorf("the last layer gives %d values; a head gives one score", in)
	}
	return nil
}

// Score is the head's probability (0..1) that the window (Window×96
// embedding values, oldest first) ends in the phrase (0 when its sums
// overflow: a head of values near float32's largest).
func (h *Head) Score(window []float32) float32 {
	x := window
	var buf [2][]float32
	for i, l := range h.Layers {
		y := buf[i%2]
		if cap(y) < l.Out {
			y = make([]float32, l.Out)
		}
		y = y[:l.Out]
		for o := range y {
			row := l.W[o*l.In : (o+1)*l.In]
			s := l.B[o]
			for k, v := range x[:min(len(x), l.In)] {
				s += row[k] * v
			}
			if i < len(h.Layers)-1 && s < 0 {
				s = 0
			}
			y[o] = s
		}
		buf[i%2] = y
		x = y
	}
	if math.IsNaN(float64(x[0])) {
		return 0 // its sums overflowed (+Inf − Inf): it cannot tell
	}
	return float32(1 / (1 + math.Exp(-float64(x[0]))))
}

// MarshalBinary encodes h as a head file.
func (h *Head) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(headMagic)
	put := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	put(uint32(HeadVersion))
	put(uint32(h.Window))
	put(uint32(len(h.Layers)))
	for _, l := range h.Layers {
		put(uint32(l.In))
		put(uint32(l.Out))
		put(l.W)
		put(l.B)
	}
	return b.Bytes(), nil
}

// ParseHead decodes and checks a head file.
func ParseHead(raw []byte) (*Head, error) {
	r := bytes.NewReader(raw)
	magic := make([]byte, len(headMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != headMagic {
		return nil, errors.New("not a head file")
	}
	var hdr [3]uint32
	if err := binary.Read(r, binary.LittleEndian, &hdr); err != nil {
		return nil, fmt.Errorf("head file: %w", err)
	}
	if hdr[0] != HeadVersion {
		return nil, fmt.Errorf("head file version %d; this build reads version %d", hdr[0], HeadVersion)
	}
	if hdr[2] == 0 || hdr[2] > 8 {
		return nil, fmt.Errorf("head file of %d layers", hdr[2])
	}
	h := &Head{Window: int(hdr[1])}
	total := 0
	for range hdr[2] {
		var io2 [2]uint32
		if err := binary.Read(r, binary.LittleEndian, &io2); err != nil {
			return nil, fmt.Errorf("head file: %w", err)
		}
		in, out := int64(io2[0]), int64(io2[1])
		if in == 0 || out == 0 || in > maxHeadValues || out > maxHeadValues {
			return nil, fmt.Errorf("head file: a %d×%d layer does not fit", out, in)
		}
		n := in * out // at most 2⁴⁴: it cannot wrap
		if int64(total)+n+out > maxHeadValues || 4*(n+out) > int64(r.Len()) {
			return nil, fmt.Errorf("head file: a %d×%d layer does not fit", io2[1], io2[0])
		}
		total += int(n) + int(io2[1])
		l := Layer{In: int(io2[0]), Out: int(io2[1]), W: make([]float32, n), B: make([]float32, io2[1])}
		if err := binary.Read(r, binary.LittleEndian, l.W); err != nil {
			return nil, fmt.Errorf("head file: %w", err)
		}
		if err := binary.Read(r, binary.LittleEndian, l.B); err != nil {
			return nil, fmt.Errorf("head file: %w", err)
		}
		h.Layers = append(h.Layers, l)
	}
	if r.Len() != 0 {
		return nil, errors.New("head file: data after the last layer")
	}
	if err := h.Check(); err != nil {
		return nil, fmt.Errorf("head file: %w", err)
	}
	return h, nil
}

// WithHeads is rt with Go heads among its wake models: model i is heads[i]
// when that is not nil, else rt's next ONNX wake model in order.
func WithHeads(rt Runtime, heads []*Head) (Runtime, error) {
	w := &headRuntime{Runtime: rt, heads: heads, onnx: make([]int, len(heads))}
	k := 0
	for i, h := range heads {
		if h == nil {
			w.onnx[i] = k
			k++
		}
	}
	if k != rt.Models() {
		return nil, fmt.Errorf("%d ONNX wake models for %d places", rt.Models(), k)
	}
	return w, nil
}

type headRuntime struct {
	Runtime
	heads []*Head
	onnx  []int // by model: its index among rt's models
}

func (r *headRuntime) Score(i int, emb []float32) (float32, error) {
	if h := r.heads[i]; h != nil {
		return h.Score(emb), nil
	}
	return r.Runtime.Score(r.onnx[i], emb)
}

func (r *headRuntime) Window(i int) int {
	if h := r.heads[i]; h != nil {
		return h.Window
	}
	return r.Runtime.Window(r.onnx[i])
}

func (r *headRuntime) Models() int { return len(r.heads) }
