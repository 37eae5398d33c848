package ort_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// enrollTakes are the speeds and pitches of a voice's five enrollment
// takes: off the wake set's grid (wpm in tens, pitch in fives), so no
// take is a clip it is measured on.
var enrollTakes = [][2]int{{133, 47}, {177, 63}, {147, 72}, {188, 52}, {158, 37}}

// BenchmarkWakeSetVerified measures the owner's verifier on the wake set's
// held-out part, per voice: each voice (espeak-ng voice and variant) of the
// held-out positives and confusables enrolls (five takes of "hey jarvis"
// at speeds and pitches the set does not use, and wakeword.EnrollPrompts,
// all in that voice); then its own held-out clips in every condition and
// the confusables said in it are scored with its verifier, and every
// verifier hears the 60 minutes of ordinary speech and music. Printed
// beside the bare model's figures on the same clips, in one run:
//
//	go test ./audio/wakeword/ort/ -run '^$' -bench WakeSetVerified -benchtime 1x -timeout 3h
//
// It reuses BenchmarkWakeSet's cached scores (and scores what is missing);
// only the audio around candidate scores (at or over the verifier's
// candidate score) is run again, for the windows. AGENTHOST_WAKESET_VOICES=N
// takes N voices (a fixed shuffle; all by default); AGENTHOST_WAKESET_ONLY
// (a substring of a condition's name, "|" between several) takes those
// conditions; AGENTHOST_WAKESET_PART, AGENTHOST_WAKESET_MINUTES as for
// BenchmarkWakeSet.
func BenchmarkWakeSetVerified(b *testing.B) {
	open, minutes := wakesetRun(b)
	set, held, _ := measuredPart(b)
	const step = 320
	for b.Loop() {
		conds := conditions(b, set, held, minutes)
		if only := os.Getenv("AGENTHOST_WAKESET_ONLY"); only != "" {
			var keep []*condition
			for _, c := range conds {
				for _, o := range strings.Split(only, "|") {
					if strings.Contains(c.name, o) {
						keep = append(keep, c)
						break
					}
				}
			}
			conds = keep
		}
		// Each clip's voice, by its name.
		voiceOf := map[string]string{}
		for _, list := range [][]wakewordtest.Clip{set.Positives, set.Confusables} {
			for _, c := range list {
				if c.Held == held {
					voiceOf[c.Name()] = c.VoiceName()
				}
			}
		}
		var voices []string
		seen := map[string]bool{}
		for _, c := range conds {
			for _, cl := range c.clips {
				if v := voiceOf[cl.name]; v != "" && !seen[v] {
					seen[v] = true
					voices = append(voices, v)
				}
			}
		}
		sort.Strings(voices)
		rand.New(rand.NewPCG(24, 4)).Shuffle(len(voices), func(i, j int) { voices[i], voices[j] = voices[j], voices[i] })
		if n, err := strconv.Atoi(os.Getenv("AGENTHOST_WAKESET_VOICES")); err == nil && n < len(voices) {
			voices = voices[:n]
		}
		t0 := time.Now()
		verifiers := enrollVoices(b, set, open, voices)
		b.Logf("enrolled %d voices in %s", len(voices), time.Since(t0).Round(time.Second))
		cand := float32(wakeword.DefaultCandidate)

		// The bare scores, from BenchmarkWakeSet's cache.
		traces := make([][]wakeword.Score, len(conds))
		var rt0 *ort.Runtime
		for i, c := range conds {
			traces[i] = cachedTrace(b, set.Dir, "raw", step, c.pcm, func() []wakeword.Score {
				if rt0 == nil {
					rt0 = open()
				}
				return trace(b, rt0, step, c.pcm)
			})
		}
		if rt0 != nil {
			rt0.Close()
		}

		// The windows of the candidate scores: the audio around them run
		// again (2.56 s of context before: the scores are the stream's).
		type region struct {
			cond       int
			start, end int // samples
		}
		var regions []region
		candidates := 0
		for i := range conds {
			var r *region
			for _, sc := range traces[i] {
				if sc.Value < cand {
					continue
				}
				candidates++
				s := max(0, int(sc.End)-2*wakeword.Rate-9*wakeword.Rate/16)
				s -= s % wakeword.Hop
				if r != nil && s <= r.end {
					r.end = int(sc.End)
					continue
				}
				if r != nil {
					regions = append(regions, *r)
				}
				r = &region{cond: i, start: s, end: int(sc.End)}
			}
			if r != nil {
				regions = append(regions, *r)
			}
		}
		// probs[cond][end][voice] is each verifier's probability.
		probs := make([]map[int64][]float32, len(conds))
		for i := range probs {
			probs[i] = map[int64][]float32{}
		}
		var mu sync.Mutex
		var mismatched, rerun int
		t0 = time.Now()
		onTwo(regions, open, func(rt func() *ort.Runtime, r region) {
			ws, err := wakeword.Windows(rt(), 0, step, conds[r.cond].pcm[r.start:r.end], func(s float32, _ int64) bool { return s >= cand })
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			rerun += r.end - r.start
			for _, w := range ws {
				ps := make([]float32, len(voices))
				for k, v := range voices {
					if verifiers[v] != nil {
						ps[k] = verifiers[v].Prob(w.Emb)
					}
				}
				probs[r.cond][int64(r.start)+w.End] = ps
			}
		})
		for i := range conds {
			for _, sc := range traces[i] {
				if sc.Value >= cand {
					if _, ok := probs[i][sc.End]; !ok {
						mismatched++
					}
				}
			}
		}
		b.Logf("ran %s of audio again around %d candidate scores in %s; %d candidates not found again", time.Duration(rerun)*time.Second/wakeword.Rate, candidates, time.Since(t0).Round(time.Second), mismatched)
		printVerified(b, conds, traces, probs, voices, voiceOf, verifiers, held)
		for _, v := range voices {
			if verifiers[v] != nil {
				verifierCost(b, verifiers[v], conds, traces, cand)
				break
			}
		}
	}
}

// enrollVoices enrolls each voice (its verifier cached in the set's folder,
// keyed by the voice and the sources that make its weights; a file this
// build cannot read is enrolled again).
func enrollVoices(b *testing.B, set *wakewordtest.Set, open func() *ort.Runtime, voices []string) map[string]*wakeword.Verifier {
	h := sha256.New()
	writeCode(b, h, "../enroll.go", "../train.go", "../stream.go", "ort.go")
	fmt.Fprint(h, enrollTakes)
	code := h.Sum(nil)
	out := map[string]*wakeword.Verifier{}
	var mu sync.Mutex
	onTwo(voices, open, func(rt func() *ort.Runtime, voice string) {
		k := sha256.Sum256(append(append([]byte(nil), code...), voice...))
		path := filepath.Join(set.Dir, "verifier-"+hex.EncodeToString(k[:8])+".json")
		v, err := wakeword.LoadVerifier(path)
		if v == nil || err != nil {
			e := wakeword.Enrollment{Model: 0, Name: "hey_jarvis"}
			for _, t := range enrollTakes {
				p, err := set.Say(voice, t[0], t[1], "hey jarvis")
				if err != nil {
					b.Error(err)
					return
				}
				e.Phrases = append(e.Phrases, p)
			}
			for i, text := range wakeword.EnrollPrompts {
				p, err := set.Say(voice, 140+10*(i%4), 40+5*(i%5), text)
				if err != nil {
					b.Error(err)
					return
				}
				e.Others = append(e.Others, p)
			}
			if v, err = wakeword.Enroll(rt(), e); err != nil {
				// A voice the model does not hear at all cannot enroll.
				fmt.Fprintf(os.Stderr, "wakeset: %s does not enroll: %v\n", voice, err)
				v = nil
			} else if raw, err := json.Marshal(v); err == nil {
				os.WriteFile(path+".tmp", raw, 0o644)
				os.Rename(path+".tmp", path)
			}
		}
		mu.Lock()
		out[voice] = v
		mu.Unlock()
	})
	return out
}

// printVerified prints the bare model's figures and the verified ones on
// the clips of the enrolled voices.
func printVerified(b *testing.B, conds []*condition, traces [][]wakeword.Score, probs []map[int64][]float32, voices []string, voiceOf map[string]string, verifiers map[string]*wakeword.Verifier, held bool) {
	idx := map[string]int{}
	enrolled := 0
	for k, v := range voices {
		idx[v] = k
		if verifiers[v] != nil {
			enrolled++
		}
	}
	cand := float32(wakeword.DefaultCandidate)
	bare := setting{front: "raw", step: 320, threshold: float32(wakeword.Shipped.Threshold), over: 1}
	ceiling := setting{front: "raw", step: 320, threshold: cand, over: 1}
	ver := setting{front: "raw", step: 320, threshold: float32(wakeword.DefaultVerifierThreshold), over: 1}
	// verTrace: the trace as the owner (by step) with a verifier hears it:
	// its probability on candidates; a voice that did not enroll has none
	// and hears with the bare model.
	verTrace := func(i int, owner func(end int64) int) []wakeword.Score {
		out := make([]wakeword.Score, len(traces[i]))
		for n, sc := range traces[i] {
			out[n].End = sc.End
			k := owner(sc.End)
			switch {
			case k < 0:
			case verifiers[voices[k]] == nil:
				if sc.Value >= bare.threshold {
					out[n].Value = 1
				}
			case sc.Value >= cand:
				if ps, ok := probs[i][sc.End]; ok {
					out[n].Value = ps[k]
				}
			}
		}
		return out
	}
	byClip := func(c *condition) func(end int64) int {
		return func(end int64) int {
			j := sort.Search(len(c.clips), func(j int) bool { return int64(c.clips[j].start-lead) > end }) - 1
			if j < 0 {
				j = 0
			}
			if k, ok := idx[voiceOf[c.clips[j].name]]; ok {
				return k
			}
			return -1
		}
	}
	sub := func(c *condition) *condition {
		s := *c
		s.clips = nil
		for _, cl := range c.clips {
			if _, ok := idx[voiceOf[cl.name]]; ok {
				s.clips = append(s.clips, cl)
			}
		}
		return &s
	}
	pct := func(n, of int) string {
		return fmt.Sprintf("%d/%d (%.0f%%)", n, of, 100*float64(n)/float64(max(of, 1)))
	}
	var sb strings.Builder
	part := map[bool]string{true: "held-out", false: "tuning"}[held]
	fmt.Fprintf(&sb, "| %s, clips of the %d voices (%d enrolled) | target | bare, shipped (20 ms, 0.5) | bare at the candidate score %.1f (the verifier's ceiling) | owner's verifier (candidate %.1f, %.2f) |\n|---|---|---|---|---|\n",
		part, len(voices), enrolled, cand, cand, ver.threshold)
	var negBare int
	negVer := make([]int, len(voices))
	var negDur time.Duration
	for i, c := range conds {
		switch c.kind {
		case "positive", "confusable":
			s := sub(c)
			vt := verTrace(i, byClip(c))
			hb, _ := hits(bare, s, traces[i])
			hc, _ := hits(ceiling, s, traces[i])
			hv, _ := hits(ver, s, vt)
			name := c.name
			if c.kind == "confusable" {
				name = "confusables that wake it"
			}
			fmt.Fprintf(&sb, "| %s | | %s | %s | %s |\n", name, pct(hb, len(s.clips)), pct(hc, len(s.clips)), pct(hv, len(s.clips)))
			if c.name == "clean" {
				_, _, lb := hitsLat(bare, s, traces[i])
				_, _, lv := hitsLat(ver, s, vt)
				fmt.Fprintf(&sb, "| latency after the phrase's end, clean (p50/p95) | p95 ≤ 300 ms | %.0f/%.0f ms | | %.0f/%.0f ms |\n", pctF(lb, 50), pctF(lb, 95), pctF(lv, 50), pctF(lv, 95))
			}
			if c.kind == "confusable" {
				_, quiet := hits(ver, s, vt)
				woke := map[string]bool{}
				for _, cl := range s.clips {
					woke[cl.name] = true
				}
				for _, q := range quiet {
					delete(woke, q)
				}
				var names []string
				for n := range woke {
					names = append(names, n)
				}
				sort.Strings(names)
				defer fmt.Printf("confusables that woke the verified detector: %s\n", strings.Join(names, "; "))
			}
		case "negative":
			negDur += c.duration
			negBare += len(detections(bare, traces[i]))
			for k := range voices {
				if verifiers[voices[k]] != nil {
					negVer[k] += len(detections(ver, verTrace(i, func(int64) int { return k })))
				}
			}
		}
	}
	if negDur > 0 {
		total, most := 0, 0
		for _, n := range negVer {
			total += n
			most = max(most, n)
		}
		fmt.Fprintf(&sb, "| false wakes in %s of ordinary speech and music | 0 | %d | | %.2f per owner (max %d; %d over %d owners) |\n",
			negDur.Round(time.Minute), negBare, float64(total)/float64(max(enrolled, 1)), most, total, enrolled)
	}
	fmt.Print(sb.String())
}

// verifierCost prints what the verifier costs: a probability's time, and
// how often one is asked (candidate scores per second of sound).
func verifierCost(b *testing.B, v *wakeword.Verifier, conds []*condition, traces [][]wakeword.Score, cand float32) {
	if v == nil {
		return
	}
	w := make([]float32, len(v.Weights))
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	const n = 200000
	c0 := cpuTime()
	var sink float32
	for i := 0; i < n; i++ {
		sink += v.Prob(w)
	}
	per := (cpuTime() - c0) / n
	for i, c := range conds {
		if c.kind != "negative" && c.name != "clean" {
			continue
		}
		k := 0
		for _, sc := range traces[i] {
			if sc.Value >= cand {
				k++
			}
		}
		rate := float64(k) / c.duration.Seconds()
		fmt.Printf("verifier cost on %s: %.2f candidate scores a second, %s each: %.4f%% of one core (%v)\n", c.name, rate, per, 100*rate*per.Seconds(), sink > 0)
	}
	fmt.Printf("verifier memory: %d weights (%d KB)\n", len(v.Weights), 4*len(v.Weights)/1024)
}
