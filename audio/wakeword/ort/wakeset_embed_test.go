package ort_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
)

// writeCode writes the code of the sources (named from this folder) to
// h without their comments and layout: a cache keyed by it is not made
// anew when a comment is rewrapped.
func writeCode(b *testing.B, h io.Writer, srcs ...string) {
	_, self, _, _ := goruntime.Caller(0)
	for _, src := range srcs {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(filepath.Dir(self), src), nil, parser.SkipObjectResolution)
		if err != nil {
			b.Fatal(err)
		}
		if err := printer.Fprint(h, fset, f); err != nil {
			b.Fatal(err)
		}
	}
}

// embSeq is a stream's embeddings as the detector makes them: one every
// step samples, the first made after the audio up to first. A wake
// model's window at embedding j is every (Hop/step)-th one up to j.
type embSeq struct {
	first int64
	step  int
	emb   []float32 // n × 96
}

func (e *embSeq) n() int                { return len(e.emb) / 96 }
func (e *embSeq) end(j int) int64       { return e.first + int64(j*e.step) }
func (e *embSeq) spacing() int          { return wakeword.Hop / e.step }
func (e *embSeq) firstWindow(w int) int { return (w - 1) * e.spacing() }

// window writes the w embeddings of the window ending at embedding j
// (j ≥ firstWindow(w)) into dst.
func (e *embSeq) window(j, w int, dst []float32) []float32 {
	dst = dst[:0]
	for k := j - (w-1)*e.spacing(); k <= j; k += e.spacing() {
		dst = append(dst, e.emb[96*k:96*(k+1)]...)
	}
	return dst
}

// scores runs a head over every window, as a stream scores it.
func (e *embSeq) scores(h *wakeword.Head) []wakeword.Score {
	var out []wakeword.Score
	buf := make([]float32, 0, h.Window*96)
	for j := e.firstWindow(h.Window); j < e.n(); j++ {
		buf = e.window(j, h.Window, buf)
		out = append(out, wakeword.Score{Value: h.Score(buf), End: e.end(j)})
	}
	return out
}

// embRecorder keeps the embeddings a stream makes.
type embRecorder struct {
	wakeword.Runtime
	step, mels int
	ends       []int64
	emb        []float32
}

func (r *embRecorder) Mel(s []float32) ([]float32, error) {
	r.mels++
	return r.Runtime.Mel(s)
}

func (r *embRecorder) Embed(m []float32) ([]float32, error) {
	e, err := r.Runtime.Embed(m)
	if err == nil {
		r.ends = append(r.ends, int64(r.mels*r.step))
		r.emb = append(r.emb, e...)
	}
	return e, err
}

// cachedEmbeddings are pcm's embeddings every step samples (and the
// pre-trained model's scores, kept in cachedTrace's cache too), from the
// set's folder, keyed by the audio, the step and the sources that make
// them; else rt()'s, stored.
func cachedEmbeddings(b *testing.B, dir string, step int, pcm []int16, rt func() *ort.Runtime) *embSeq {
	h := sha256.New()
	h.Write(audiotest.SamplesToBytes(pcm))
	fmt.Fprintf(h, "|emb|%d|", step)
	writeCode(b, h, "../stream.go", "ort.go")
	path := filepath.Join(dir, "emb-"+hex.EncodeToString(h.Sum(nil))[:16]+".bin")
	if raw, err := os.ReadFile(path); err == nil && len(raw) >= 8 && (len(raw)-8)%(4*96) == 0 {
		e := &embSeq{first: int64(binary.LittleEndian.Uint64(raw)), step: step, emb: make([]float32, (len(raw)-8)/4)}
		for i := range e.emb {
			e.emb[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[8+4*i:]))
		}
		return e
	}
	rec := &embRecorder{Runtime: rt(), step: step}
	tr := trace(b, rec, step, pcm)
	cachedTrace(b, dir, "raw", step, pcm, func() []wakeword.Score { return tr })
	e := &embSeq{step: step, emb: rec.emb}
	if len(rec.ends) > 0 {
		e.first = rec.ends[0]
		for j, end := range rec.ends {
			if end != e.end(j) {
				b.Fatalf("embedding %d after %d samples, not %d", j, end, e.end(j))
			}
		}
	}
	raw := make([]byte, 8+4*len(e.emb))
	binary.LittleEndian.PutUint64(raw, uint64(e.first))
	for i, v := range e.emb {
		binary.LittleEndian.PutUint32(raw[8+4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(path+".tmp", raw, 0o644); err == nil {
		os.Rename(path+".tmp", path)
	}
	return e
}

// embedAll gets the embeddings of every condition (two at a time, the
// longest first), and the pre-trained model's scores of each.
func embedAll(b *testing.B, dir string, step int, conds []*condition, open func() *ort.Runtime) ([]*embSeq, [][]wakeword.Score) {
	seqs := make([]*embSeq, len(conds))
	trs := make([][]wakeword.Score, len(conds))
	order := indices(len(conds))
	sort.SliceStable(order, func(a, b int) bool { return len(conds[order[a]].pcm) > len(conds[order[b]].pcm) })
	onTwo(order, open, func(rt func() *ort.Runtime, i int) {
		c := conds[i]
		t0 := time.Now()
		seqs[i] = cachedEmbeddings(b, dir, step, c.pcm, rt)
		trs[i] = cachedTrace(b, dir, "raw", step, c.pcm, func() []wakeword.Score { return trace(b, rt(), step, c.pcm) })
		if d := time.Since(t0); d > 5*time.Second {
			fmt.Fprintf(os.Stderr, "wakeset: embeddings of %s (%s of audio) in %s\n", c.name, c.duration.Round(time.Second), d.Round(time.Second))
		}
	})
	return seqs, trs
}
