package ort_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/heads"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// fusion is a rule that fires on the own head's and the pre-trained
// model's scores together: own ≥ a (over scores in a row) while the
// pre-trained model's best of the last win scores is ≥ b, or (geo) the
// geometric mean of the two ≥ a.
type fusion struct {
	geo  bool
	a, b float32
	over int
	win  int // scores of the pre-trained model looked back over (1: the same one)
}

func (f fusion) String() string {
	w := fmt.Sprintf("%d ms", 20*f.win)
	if f.geo {
		return fmt.Sprintf("√(own·pre) ≥ %.2f, pre best of %s", f.a, w)
	}
	s := fmt.Sprintf("own ≥ %.2f", f.a)
	if f.over > 1 {
		s += fmt.Sprintf(" %d in a row", f.over)
	}
	return s + fmt.Sprintf(" and pre ≥ %.3f (best of %s)", f.b, w)
}

// fused is the trace rule f fires on at threshold f.a (setting fusedSetting).
func (f fusion) fused(own, pre []wakeword.Score) []wakeword.Score {
	at := make(map[int64]float32, len(pre))
	for _, s := range pre {
		at[s.End] = s.Value
	}
	out := make([]wakeword.Score, len(own))
	step := int64(headStep)
	for i, s := range own {
		p := float32(0)
		for k := 0; k < f.win; k++ {
			p = max(p, at[s.End-int64(k)*step])
		}
		v := s.Value
		switch {
		case f.geo:
			v = float32(math.Sqrt(float64(s.Value) * float64(p)))
		case p < f.b:
			v = 0
		}
		out[i] = wakeword.Score{Value: v, End: s.End}
	}
	return out
}

func (f fusion) setting() setting {
	return setting{front: "raw", step: headStep, threshold: f.a, over: max(f.over, 1)}
}

// fusionGrid are the rules tried.
func fusionGrid() []fusion {
	var out []fusion
	for _, win := range []int{1, 10, 25} {
		for _, a := range []float32{0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99} {
			for _, b := range []float32{0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5} {
				for _, over := range []int{1, 2, 3} {
					out = append(out, fusion{a: a, b: b, over: over, win: win})
				}
			}
		}
		for _, t := range []float32{0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7} {
			for _, over := range []int{1, 2} {
				out = append(out, fusion{geo: true, a: t, over: over, win: win})
			}
		}
	}
	return out
}

// fusionFigures are one rule's figures on one part: hits in each positive
// condition (by name), confusable clips that woke it, false wakes, the
// negatives' minutes.
type fusionFigures struct {
	recall     map[string]float64
	confusable float64 // share of the confusable clips
	falseWakes int
	minutes    float64
}

// fusionTargets: issue 24's recall targets by condition.
var fusionTargets = []struct {
	cond string
	min  float64
}{{"clean", 0.95}, {"pink 10 dB", 0.90}, {"brown 10 dB", 0.90}, {"pink 5 dB", 0.80}, {"babble 5 dB", 0.80},
	{"far (low-passed, reverb, -20 dB), pink 10 dB", 0.80}, {"music 0 dB", 0.90}}

// met counts the targets met (the recall ones, ≤ 1% confusables, 0 false
// wakes).
func (ff fusionFigures) met() int {
	n := 0
	for _, t := range fusionTargets {
		if ff.recall[t.cond] >= t.min {
			n++
		}
	}
	if ff.confusable <= 0.01 {
		n++
	}
	if ff.falseWakes == 0 {
		n++
	}
	return n
}

// shortfall is how far the recall targets are missed in all (0: met).
func (ff fusionFigures) shortfall() float64 {
	var s float64
	for _, t := range fusionTargets {
		s += max(0, t.min-ff.recall[t.cond])
	}
	return s
}

func figuresOf(conds []*condition, trs [][]wakeword.Score, s setting) fusionFigures {
	ff := fusionFigures{recall: map[string]float64{}}
	for i, c := range conds {
		switch c.kind {
		case "positive":
			h, _ := hits(s, c, trs[i])
			ff.recall[c.name] = float64(h) / float64(len(c.clips))
		case "confusable":
			h, _ := hits(s, c, trs[i])
			ff.confusable = float64(h) / float64(len(c.clips))
		case "negative":
			ff.falseWakes += len(detections(s, trs[i]))
			ff.minutes += c.duration.Minutes()
		}
	}
	return ff
}

// BenchmarkWakeSetFusion measures rules that fuse agenthost's own hey
// jarvis (the shipped head, heads.HeyJarvis) with the pre-trained
// hey_jarvis, from the cached embeddings and scores: the operating point is
// chosen on the tuning part (the most targets met, then the fewest
// confusables and false wakes, then the smallest recall shortfall) and
// measured on the held-out part beside either model alone. The own head
// was trained on the tuning part, so its tuning figures flatter it: the
// choice leans on the pre-trained model's side. Figures only:
//
//	go test ./audio/wakeword/ort/ -run '^$' -bench WakeSetFusion -benchtime 1x -timeout 3h
func BenchmarkWakeSetFusion(b *testing.B) {
	set := wakewordtest.Wakeset(b)
	open, minutes := wakesetRun(b)
	head, err := heads.Load(heads.HeyJarvis)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		type part struct {
			conds     []*condition
			own, pre  [][]wakeword.Score
			name      string
			byFusion  map[fusion]fusionFigures
			preAlone  fusionFigures
			ownAlone  map[string]fusionFigures
			ownSettng []setting
		}
		load := func(name string, conds []*condition) *part {
			seqs, pre := embedAll(b, set.Dir, headStep, conds, open)
			p := &part{conds: conds, pre: pre, name: name, byFusion: map[fusion]fusionFigures{}, ownAlone: map[string]fusionFigures{}}
			for _, s := range seqs {
				p.own = append(p.own, s.scores(head))
			}
			p.preAlone = figuresOf(conds, pre, setting{front: "raw", step: headStep, threshold: 0.5, over: 1})
			for _, s := range []setting{{"own 0.5", "raw", headStep, 0.5, 1}, {"own 0.9, 2 in a row", "raw", headStep, 0.9, 2}} {
				p.ownAlone[s.name] = figuresOf(conds, p.own, s)
				p.ownSettng = append(p.ownSettng, s)
			}
			for _, f := range fusionGrid() {
				trs := make([][]wakeword.Score, len(conds))
				for i := range conds {
					trs[i] = f.fused(p.own[i], p.pre[i])
				}
				p.byFusion[f] = figuresOf(conds, trs, f.setting())
			}
			return p
		}
		tune := load("tuning", conditions(b, set, false, minutes))
		held := load("held-out", conditions(b, set, true, minutes))
		grid := fusionGrid()
		better := func(x, y fusionFigures) bool {
			if x.met() != y.met() {
				return x.met() > y.met()
			}
			ex, ey := x.confusable*100+float64(x.falseWakes), y.confusable*100+float64(y.falseWakes)
			if ex != ey {
				return ex < ey
			}
			return x.shortfall() < y.shortfall()
		}
		sort.SliceStable(grid, func(i, j int) bool { return better(tune.byFusion[grid[i]], tune.byFusion[grid[j]]) })
		chosen := grid[0]
		fmt.Printf("chosen on the tuning part: %s\n", chosen)
		// Held-out, as if chosen there: what the tuning part's choice leaves.
		hgrid := append([]fusion(nil), grid...)
		sort.SliceStable(hgrid, func(i, j int) bool { return better(held.byFusion[hgrid[i]], held.byFusion[hgrid[j]]) })
		type column struct {
			name string
			t, h fusionFigures
		}
		cols := []column{{"pre-trained (0.5)", tune.preAlone, held.preAlone}}
		for _, s := range tune.ownSettng {
			cols = append(cols, column{s.name, tune.ownAlone[s.name], held.ownAlone[s.name]})
		}
		cols = append(cols, column{"fused, chosen on tuning: " + chosen.String(), tune.byFusion[chosen], held.byFusion[chosen]})
		for _, f := range grid[1:4] {
			cols = append(cols, column{"tuning's next: " + f.String(), tune.byFusion[f], held.byFusion[f]})
		}
		cols = append(cols, column{"best on held-out (for reference only): " + hgrid[0].String(), tune.byFusion[hgrid[0]], held.byFusion[hgrid[0]]})
		for _, pt := range []struct {
			name string
			get  func(c column) fusionFigures
		}{{"held-out", func(c column) fusionFigures { return c.h }}, {"tuning", func(c column) fusionFigures { return c.t }}} {
			var sb strings.Builder
			sb.WriteString("| " + pt.name + " | target |")
			for _, c := range cols {
				sb.WriteString(" " + c.name + " |")
			}
			sb.WriteString("\n|---|---|" + strings.Repeat("---|", len(cols)) + "\n")
			for _, t := range fusionTargets {
				fmt.Fprintf(&sb, "| %s | ≥ %.0f%% |", t.cond, 100*t.min)
				for _, c := range cols {
					fmt.Fprintf(&sb, " %.0f%% |", 100*pt.get(c).recall[t.cond])
				}
				sb.WriteString("\n")
			}
			sb.WriteString("| confusables | ≤ 1% |")
			for _, c := range cols {
				fmt.Fprintf(&sb, " %.1f%% |", 100*pt.get(c).confusable)
			}
			fmt.Fprintf(&sb, "\n| false wakes in %.0f min | 0 |", cols[0].h.minutes)
			for _, c := range cols {
				fmt.Fprintf(&sb, " %d |", pt.get(c).falseWakes)
			}
			sb.WriteString("\n| targets met (of 9) | |")
			for _, c := range cols {
				fmt.Fprintf(&sb, " %d |", pt.get(c).met())
			}
			fmt.Println(sb.String())
		}
	}
}
