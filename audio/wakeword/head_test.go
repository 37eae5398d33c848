package wakeword

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// toyData: windows of 2 embeddings whose value 5 of the last embedding
// says the class, under noise.
type toyData struct {
	x [][]float32
	y []float32
}

func newToyData(n int, seed uint64) *toyData {
	rng := rand.New(rand.NewPCG(seed, 2))
	d := &toyData{}
	for i := 0; i < n; i++ {
		w := make([]float32, 2*embedSize)
		for k := range w {
			w[k] = float32(rng.NormFloat64())
		}
		y := float32(i % 2)
		w[embedSize+5] += 3 * (2*y - 1)
		d.x, d.y = append(d.x, w), append(d.y, y)
	}
	return d
}

func (d *toyData) Len() int { return len(d.x) }
func (d *toyData) Example(i int, dst []float32) ([]float32, float32, float32) {
	return append(dst[:0], d.x[i]...), d.y[i], 1
}

// TestTrainHeadLearnsAndIsDeterministic: a head trained twice on the same
// windows is the same bit for bit, and tells the two classes apart.
func TestTrainHeadLearnsAndIsDeterministic(t *testing.T) {
	d := newToyData(3000, 1)
	o := HeadOptions{Window: 2, Hidden: []int{8}, Epochs: 10, Batch: 32, LR: 3e-3, Seed: 7, Noise: 0.3}
	h1, err := TrainHead(d, o)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := TrainHead(d, o)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := h1.MarshalBinary()
	b2, _ := h2.MarshalBinary()
	if !bytes.Equal(b1, b2) {
		t.Fatal("two trainings on the same data gave different heads")
	}
	right := 0
	test := newToyData(200, 2)
	for i := range test.x {
		if (h1.Score(test.x[i]) >= 0.5) == (test.y[i] == 1) {
			right++
		}
	}
	if right < 190 {
		t.Fatalf("%d of 200 windows told apart; a value 6 standard deviations apart should tell ~all", right)
	}
}

// TestAHeadFileReadsBackTheSameHead: a head written and read again scores
// as it did; a damaged file is an error.
func TestAHeadFileReadsBackTheSameHead(t *testing.T) {
	h, err := TrainHead(newToyData(100, 1), HeadOptions{Window: 2, Hidden: []int{4, 3}, Epochs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := h.MarshalBinary()
	back, err := ParseHead(raw)
	if err != nil {
		t.Fatal(err)
	}
	w := newToyData(1, 3).x[0]
	if back.Score(w) != h.Score(w) {
		t.Fatalf("read back it scores %v, not %v", back.Score(w), h.Score(w))
	}
	for _, bad := range [][]byte{nil, raw[:len(raw)-1], append(append([]byte(nil), raw...), 0), []byte("AHWH\x02\x00\x00\x00")} {
		if _, err := ParseHead(bad); err == nil {
			t.Errorf("a damaged file of %d bytes was read", len(bad))
		}
	}
}

// FuzzParseHead: whatever a head file holds, reading it gives a head that
// passes its checks and scores a number in [0, 1], or an error.
func FuzzParseHead(f *testing.F) {
	h, _ := TrainHead(newToyData(20, 1), HeadOptions{Window: 2, Hidden: []int{2}, Epochs: 1, Seed: 1})
	raw, _ := h.MarshalBinary()
	f.Add(raw)
	f.Add([]byte("AHWH\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHead(b)
		if err != nil {
			return
		}
		if s := h.Score(make([]float32, h.Window*embedSize)); !(s >= 0 && s <= 1) {
			t.Fatalf("score %v", s)
		}
	})
}

// TestAHeadWhoseSumsOverflowScoresANumber: a head file of finite values
// passes its checks, but values near float32's largest overflow the sums
// (+Inf − Inf): it scored NaN, which no threshold ever reaches, where
// FuzzParseHead asks for a number in [0, 1].
func TestAHeadWhoseSumsOverflowScoresANumber(t *testing.T) {
	const big = 3e38
	h := &Head{Window: 1, Layers: []Layer{
		{In: embedSize, Out: 2, W: make([]float32, 2*embedSize), B: []float32{big, big}},
		{In: 2, Out: 1, W: []float32{big, -big}, B: []float32{0}},
	}}
	raw, _ := h.MarshalBinary()
	p, err := ParseHead(raw)
	if err != nil {
		t.Skipf("the head file is refused (%v): nothing to score", err)
	}
	if s := p.Score(make([]float32, embedSize)); !(s >= 0 && s <= 1) {
		t.Errorf("score %v, want a number in [0, 1]", s)
	}
}
