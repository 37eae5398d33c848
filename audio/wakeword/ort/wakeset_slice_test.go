package ort_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// tuningSlice is the part of the tuning part the own head is not trained
// on and its operating point is chosen on: every clip said by one of its
// voices (every 5th of the tuning positives' voices, by name; in every
// condition, the phrase, near misses and the phrase shifted alike) and
// every 3rd stream of negatives (the first of them speech, the second
// music).
type tuningSlice struct {
	voices map[string]bool
	negs   map[int]bool // indices of the conditions held back whole
}

func newTuningSlice(set *wakewordtest.Set, conds []*condition) *tuningSlice {
	sl := &tuningSlice{voices: map[string]bool{}, negs: map[int]bool{}}
	seen := map[string]bool{}
	var vs []string
	for _, c := range set.Positives {
		if !c.Held && !seen[c.VoiceName()] {
			seen[c.VoiceName()] = true
			vs = append(vs, c.VoiceName())
		}
	}
	sort.Strings(vs)
	for i, v := range vs {
		if i%5 == 2 {
			sl.voices[v] = true
		}
	}
	n := 0
	for i, c := range conds {
		if c.kind == "negative" {
			if n%3 == 2 {
				sl.negs[i] = true
			}
			n++
		}
	}
	return sl
}

// heldBack reports whether window j of condition i (c, embeddings s) hears
// any of the slice: a stream held back, or a clip of a slice voice at the
// window's end or 2.1 s before it (a window's whole audio; clips are
// 2.75 s apart).
func (sl *tuningSlice) heldBack(i int, c *condition, s *embSeq, j int) bool {
	if sl == nil {
		return false
	}
	if sl.negs[i] {
		return true
	}
	end := s.end(j)
	for _, at := range []int64{end, end - wakeword.Rate*21/10} {
		k := sort.Search(len(c.clips), func(k int) bool { return int64(c.clips[k].start-lead) > at }) - 1
		if k >= 0 && sl.voices[c.clips[k].voice] {
			return true
		}
	}
	return false
}

// sliceOf is condition c with the slice's clips alone.
func (sl *tuningSlice) sliceOf(c *condition) *condition {
	out := *c
	out.clips = nil
	for _, cl := range c.clips {
		if sl.voices[cl.voice] {
			out.clips = append(out.clips, cl)
		}
	}
	return &out
}

// recallGoal is issue 24's recall goal for a condition of the wake set
// (percent), if it has one.
func recallGoal(name string) (float64, bool) {
	if strings.HasPrefix(name, "far") {
		return 80, true
	}
	g, ok := map[string]float64{"clean": 95, "pink 10 dB": 90, "brown 10 dB": 90, "pink 5 dB": 80, "babble 5 dB": 80}[name]
	return g, ok
}

// slicePoints are the operating points the slice chooses from.
var (
	sliceThresholds = []float32{0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998}
	sliceOver       = []int{1, 2, 3, 4, 5}
)

// slicePoint is an operating point's figures on the slice.
type slicePoint struct {
	s         setting
	wakes     int       // false wakes in the slice's negative streams
	confused  int       // of its near misses
	recall    []float64 // per goal row, percent
	shortfall float64   // the worst recall's margin under its goal (≤ 0: every goal met)
}

func (p slicePoint) meanRecall() float64 {
	var sum float64
	for _, r := range p.recall {
		sum += r
	}
	return sum / float64(max(len(p.recall), 1))
}

// chooseOnSlice scores the head on the slice and chooses its operating
// point by a rule stated before looking at the held-out part: of the
// points whose recall on the slice's phrases meets every goal, the one
// with the fewest false wakes in the slice's negative streams, then the
// fewest near misses that wake it, then the highest mean recall over the
// goal rows. If none meets every goal, the one whose worst recall is
// nearest its goal. It prints the slice's figures and returns the point.
func chooseOnSlice(conds []*condition, seqs []*embSeq, head *wakeword.Head, sl *tuningSlice) setting {
	type part struct {
		c    *condition
		tr   []wakeword.Score
		goal float64
	}
	var rows, near, negs []part
	var negMinutes float64
	for i, c := range conds {
		g, hasGoal := recallGoal(c.name)
		switch {
		case sl.negs[i]:
			negs = append(negs, part{c: c, tr: seqs[i].scores(head)})
			negMinutes += c.duration.Minutes()
		case c.kind == "positive" && hasGoal, c.kind == "confusable":
			sc := sl.sliceOf(c)
			if len(sc.clips) == 0 {
				continue
			}
			p := part{c: sc, tr: seqs[i].scores(head), goal: g}
			if c.kind == "positive" {
				rows = append(rows, p)
			} else {
				near = append(near, p)
			}
		}
	}
	var nearN int
	for _, p := range near {
		nearN += len(p.c.clips)
	}
	var pts []slicePoint
	for _, t := range sliceThresholds {
		for _, over := range sliceOver {
			p := slicePoint{s: setting{front: "raw", step: headStep, threshold: t, over: over}, shortfall: -100}
			for _, n := range negs {
				p.wakes += len(detections(p.s, n.tr))
			}
			for _, n := range near {
				h, _ := hits(p.s, n.c, n.tr)
				p.confused += h
			}
			for _, r := range rows {
				h, _ := hits(p.s, r.c, r.tr)
				pct := 100 * float64(h) / float64(len(r.c.clips))
				p.recall = append(p.recall, pct)
				p.shortfall = max(p.shortfall, r.goal-pct)
			}
			pts = append(pts, p)
		}
	}
	better := func(a, b slicePoint) bool {
		if (a.shortfall <= 0) != (b.shortfall <= 0) {
			return a.shortfall <= 0
		}
		if a.shortfall > 0 && a.shortfall != b.shortfall {
			return a.shortfall < b.shortfall
		}
		if a.wakes != b.wakes {
			return a.wakes < b.wakes
		}
		if a.confused != b.confused {
			return a.confused < b.confused
		}
		return a.meanRecall() > b.meanRecall()
	}
	sort.SliceStable(pts, func(i, j int) bool { return better(pts[i], pts[j]) })
	var names []string
	for _, r := range rows {
		names = append(names, fmt.Sprintf("%s %d", r.c.name, len(r.c.clips)))
	}
	fmt.Printf("tuning slice: %d voices, %.0f minutes of negatives, %d near misses; recall rows (clips): %s\n", len(sl.voices), negMinutes, nearN, strings.Join(names, ", "))
	met := 0
	for _, p := range pts {
		if p.shortfall <= 0 {
			met++
		}
	}
	fmt.Printf("tuning slice: %d of %d points meet every recall goal; the best by the rule:\n", met, len(pts))
	for k, p := range pts[:min(6, len(pts))] {
		var rs []string
		for _, r := range p.recall {
			rs = append(rs, fmt.Sprintf("%.0f", r))
		}
		mark := " "
		if k == 0 {
			mark = "*"
		}
		fmt.Printf("%s %g, %d in a row: recall %s%% (worst under its goal by %.0f), near misses %d of %d (%.1f%%), false wakes %d in %.0f min (%.1f an hour)\n",
			mark, p.s.threshold, p.s.over, strings.Join(rs, " / "), max(p.shortfall, 0), p.confused, nearN, 100*float64(p.confused)/float64(max(nearN, 1)), p.wakes, negMinutes, float64(p.wakes)*60/max(negMinutes, 1))
	}
	if met == 0 {
		fmt.Println("tuning slice: no point meets every recall goal; chosen: the nearest")
	}
	return pts[0].s
}
