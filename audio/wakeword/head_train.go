package wakeword

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// HeadData is what a head is trained on: windows of embeddings (Window×96
// values, as a stream gives a wake model), each with its label (1: the
// phrase has just ended; 0: not) and its weight in the loss.
type HeadData interface {
	Len() int
	// Example i's window (written into dst, which has room), label and
	// weight.
	Example(i int, dst []float32) (window []float32, label, weight float32)
}

// HeadOptions are a head's training settings; zero values take the
// defaults.
type HeadOptions struct {
	Window int   // embeddings per window (16)
	Hidden []int // the hidden layers' sizes ({32, 32}: openWakeWord's)
	Epochs int   // passes over the data (12)
	Batch  int   // examples per step (256)
	LR     float64
	Decay  float64 // decoupled weight decay per step, times LR (1e-4)
	Seed   uint64
	// Noise is the spread of Gaussian noise added to each standardized
	// input value of each example in each epoch (0: none): the embeddings
	// of voices and rooms it has not heard lie around those it has.
	Noise float64
	// Progress, when set, hears each epoch's mean loss.
	Progress func(epoch int, loss float64)
}

// TrainHead fits a head to data: binary cross-entropy, each example
// weighted, by Adam over shuffled minibatches, the inputs standardized
// per embedding value (folded into the first layer at the end). Two
// goroutines share each minibatch, their gradients summed in a fixed
// order: the same data and options give the same head, bit for bit.
func TrainHead(data HeadData, o HeadOptions) (*Head, error) {
	if o.Window == 0 {
		o.Window = 16
	}
	if o.Hidden == nil {
		o.Hidden = []int{32, 32}
	}
	if o.Epochs == 0 {
		o.Epochs = 12
	}
	if o.Batch == 0 {
		o.Batch = 256
	}
	if o.LR == 0 {
		o.LR = 1e-3
	}
	if o.Decay == 0 {
		o.Decay = 1e-4
	}
	n, d := data.Len(), o.Window*embedSize
	if n == 0 {
		return nil, errors.New("no examples to train on")
	}
	buf := make([]float32, d)
	// Standardization: each of the 96 embedding values' mean and spread.
	var sum, sq [embedSize]float64
	var wsum float64
	for i := 0; i < n; i++ {
		w, _, _ := data.Example(i, buf)
		if len(w) != d {
			return nil, fmt.Errorf("example %d has %d values; a window of %d embeddings has %d", i, len(w), o.Window, d)
		}
		for k, v := range w {
			sum[k%embedSize] += float64(v)
			sq[k%embedSize] += float64(v) * float64(v)
		}
		wsum += float64(o.Window)
	}
	mean, inv := make([]float32, d), make([]float32, d)
	for k := 0; k < d; k++ {
		m := sum[k%embedSize] / wsum
		sd := math.Sqrt(max(sq[k%embedSize]/wsum-m*m, 0))
		if sd < 1e-6 {
			sd = 1
		}
		mean[k], inv[k] = float32(m), float32(1/sd)
	}

	rng := rand.New(rand.NewPCG(o.Seed, 24))
	sizes := append(append([]int{d}, o.Hidden...), 1)
	var ls []Layer
	for i := 0; i+1 < len(sizes); i++ {
		l := Layer{In: sizes[i], Out: sizes[i+1], W: make([]float32, sizes[i]*sizes[i+1]), B: make([]float32, sizes[i+1])}
		a := math.Sqrt(6 / float64(l.In)) // He (uniform)
		for k := range l.W {
			l.W[k] = float32(a * (2*rng.Float64() - 1))
		}
		ls = append(ls, l)
	}
	// Adam's moments, per layer; each worker's gradients and activations.
	type moments struct{ mW, mB, vW, vB []float32 }
	mo := make([]moments, len(ls))
	for i, l := range ls {
		mo[i] = moments{make([]float32, len(l.W)), make([]float32, len(l.B)), make([]float32, len(l.W)), make([]float32, len(l.B))}
	}
	ws := make([]*headWorker, headWorkers)
	for w := range ws {
		ws[w] = newHeadWorker(ls, sizes, d)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	const b1, b2, eps = 0.9, 0.999, 1e-8
	t := 0
	for ep := 0; ep < o.Epochs; ep++ {
		rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
		lr := o.LR
		if ep >= o.Epochs*2/3 {
			lr *= 0.3
		}
		var loss float64
		for from := 0; from < n; from += o.Batch {
			batch := order[from:min(from+o.Batch, n)]
			// The batch in contiguous shares, one per worker; their
			// gradients are summed in the workers' order: the result does
			// not depend on which finishes first.
			var wg sync.WaitGroup
			share := (len(batch) + len(ws) - 1) / len(ws)
			for w, hw := range ws {
				part := batch[min(w*share, len(batch)):min((w+1)*share, len(batch))]
				wg.Add(1)
				go func() {
					defer wg.Done()
					hw.run(data, ls, part, mean, inv, o.Noise, o.Seed, ep)
				}()
			}
			wg.Wait()
			for _, hw := range ws[1:] {
				for i := range ls {
					for k, v := range hw.gW[i] {
						ws[0].gW[i][k] += v
					}
					for k, v := range hw.gB[i] {
						ws[0].gB[i][k] += v
					}
				}
			}
			for _, hw := range ws {
				loss += hw.loss
			}
			t++
			c1, c2 := 1-math.Pow(b1, float64(t)), 1-math.Pow(b2, float64(t))
			step := float32(lr * math.Sqrt(c2) / c1)
			decay := float32(1 - lr*o.Decay)
			scale := 1 / float32(len(batch))
			adam := func(p, g, m, v []float32, dec float32) {
				for k := range p {
					gk := g[k] * scale
					m[k] = b1*m[k] + (1-b1)*gk
					v[k] = b2*v[k] + (1-b2)*gk*gk
					p[k] = p[k]*dec - step*m[k]/(float32(math.Sqrt(float64(v[k])))+eps)
				}
			}
			for i := range ls {
				adam(ls[i].W, ws[0].gW[i], mo[i].mW, mo[i].vW, decay)
				adam(ls[i].B, ws[0].gB[i], mo[i].mB, mo[i].vB, 1)
			}
		}
		if o.Progress != nil {
			o.Progress(ep+1, loss/float64(n))
		}
	}
	// Over the raw values: W' = W·inv, B' = B − Σ W·inv·mean.
	l0 := &ls[0]
	for j := 0; j < l0.Out; j++ {
		row := l0.W[j*l0.In : (j+1)*l0.In]
		var b float64
		for k := range row {
			row[k] *= inv[k]
			b += float64(row[k]) * float64(mean[k])
		}
		l0.B[j] -= float32(b)
	}
	h := &Head{Window: o.Window, Layers: ls}
	return h, h.Check()
}

// headWorkers share each minibatch.
const headWorkers = 2

// headWorker computes a share of a minibatch's gradients.
type headWorker struct {
	gW, gB      [][]float32 // by layer
	acts, grads [][]float32 // by layer's input; acts[0] is the standardized window
	buf         []float32
	loss        float64
}

func newHeadWorker(ls []Layer, sizes []int, d int) *headWorker {
	w := &headWorker{buf: make([]float32, d)}
	for _, l := range ls {
		w.gW, w.gB = append(w.gW, make([]float32, len(l.W))), append(w.gB, make([]float32, len(l.B)))
	}
	for _, s := range sizes {
		w.acts, w.grads = append(w.acts, make([]float32, s)), append(w.grads, make([]float32, s))
	}
	return w
}

// run sets the worker's gradients and loss to those of the examples.
func (hw *headWorker) run(data HeadData, ls []Layer, examples []int, mean, inv []float32, noise float64, seed uint64, epoch int) {
	for i := range ls {
		clear(hw.gW[i])
		clear(hw.gB[i])
	}
	hw.loss = 0
	acts, grads := hw.acts, hw.grads
	for _, ex := range examples {
		w, y, wt := data.Example(ex, hw.buf)
		for k, v := range w {
			acts[0][k] = (v - mean[k]) * inv[k]
		}
		if noise > 0 {
			// Seeded by the example and the epoch: the same on any worker.
			rng := rand.New(rand.NewPCG(seed^uint64(epoch)<<40, uint64(ex)))
			for k := range acts[0] {
				acts[0][k] += float32(noise * rng.NormFloat64())
			}
		}
		for i, l := range ls {
			x, out := acts[i], acts[i+1]
			for j := 0; j < l.Out; j++ {
				s := l.B[j]
				for k, v := range l.W[j*l.In : (j+1)*l.In] {
					s += v * x[k]
				}
				if i < len(ls)-1 && s < 0 {
					s = 0
				}
				out[j] = s
			}
		}
		z := float64(acts[len(ls)][0])
		p := 1 / (1 + math.Exp(-z))
		// The loss, from the logit: stable for large |z|.
		hw.loss += float64(wt) * (max(z, 0) - z*float64(y) + math.Log1p(math.Exp(-math.Abs(z))))
		grads[len(ls)][0] = wt * float32(p-float64(y))
		for i := len(ls) - 1; i >= 0; i-- {
			l, x, g := ls[i], acts[i], grads[i+1]
			if i > 0 {
				clear(grads[i])
			}
			for j := 0; j < l.Out; j++ {
				gj := g[j]
				if gj == 0 {
					continue
				}
				hw.gB[i][j] += gj
				row, grow := l.W[j*l.In:(j+1)*l.In], hw.gW[i][j*l.In:(j+1)*l.In]
				for k, v := range x {
					grow[k] += gj * v
				}
				if i > 0 {
					gi := grads[i]
					for k, v := range row {
						gi[k] += gj * v
					}
				}
			}
			if i > 0 {
				for k, v := range acts[i] {
					if v <= 0 {
						grads[i][k] = 0
					}
				}
			}
		}
	}
}
