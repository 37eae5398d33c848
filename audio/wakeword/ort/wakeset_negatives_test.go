package ort_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// Word lists the extra negatives' sentences are made from: none holds a
// word of the wake set's confusables (the held-out part measures those).
var (
	negSubjects = []string{"my brother", "the teacher", "our neighbour", "the old man", "a little girl", "the driver",
		"everyone", "the doctor", "my friend", "the manager", "the children", "a stranger", "the cook", "grandmother",
		"the pilot", "the farmer", "she", "he", "we", "they", "you", "the gardener", "the baker", "my aunt"}
	negVerbs = []string{"bought", "painted", "forgot", "found", "carried", "cleaned", "opened", "ordered", "fixed",
		"borrowed", "wanted", "needed", "sold", "lost", "hid", "washed", "mentioned", "described", "cooked", "moved"}
	negObjects = []string{"a red umbrella", "the kitchen table", "three new books", "a cup of tea", "the broken window",
		"an old bicycle", "the blue door", "some fresh bread", "a heavy suitcase", "the garden fence", "two tickets",
		"a birthday cake", "the front gate", "a warm blanket", "the morning paper", "a box of candles", "the car keys",
		"a bowl of soup", "the wooden chair", "a pair of boots", "the shopping bags", "a map of the city", "the lamp"}
	negPlaces = []string{"in the kitchen", "at the market", "near the river", "behind the school", "on the bus",
		"in the attic", "at the office", "by the harbour", "in the park", "at the station", "upstairs", "downtown",
		"in the hallway", "at the beach", "on the balcony", "in the garage", "at the library", "across the road"}
	negTimes = []string{"yesterday", "last week", "this morning", "on Friday", "after lunch", "before dinner",
		"every summer", "at midnight", "in October", "twice a day", "a year ago", "tonight", "on the weekend"}
	negStarts = []string{"", "", "", "well,", "so,", "hey,", "oh,", "honestly,", "by the way,", "you know,", "listen,",
		"okay,", "right,", "hey you,", "hey look,", "yes,", "no,"}
	negAsks = []string{"can you", "could you", "please", "would you", "let's", "don't", "did you", "will you"}
	negDo   = []string{"turn on", "turn off", "open", "close", "check", "find", "play", "pause", "call", "read",
		"bring", "show me", "tell me about", "look for", "remember"}
)

// negSentence is one sentence of the word lists, chosen by rng.
func negSentence(rng *rand.Rand) string {
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	var s string
	switch rng.IntN(4) {
	case 0, 1:
		s = strings.Join([]string{pick(negSubjects), pick(negVerbs), pick(negObjects), pick(negPlaces), pick(negTimes)}, " ")
	case 2:
		s = strings.Join([]string{pick(negAsks), pick(negDo), pick(negObjects), pick(negPlaces)}, " ")
	default:
		s = strings.Join([]string{pick(negSubjects), pick(negVerbs), pick(negObjects), "and then", pick(negVerbs), pick(negObjects)}, " ")
	}
	if st := pick(negStarts); st != "" {
		s = st + " " + s
	}
	return strings.ToUpper(s[:1]) + s[1:] + pick([]string{".", ".", "?", "!"})
}

// moreNegatives are hours of negatives made here, beside the tuning
// part's: sentences from the word lists (four to eight a clip) in every
// tuning voice and variant at 110–210 words a minute and pitch 20–90,
// a third over music or pink or brown noise at 0–20 dB; and a
// fifth of the time music or noise alone. Deterministic (seeded), the
// renders cached in the set's folder; in streams of 10 minutes.
func moreNegatives(b *testing.B, set *wakewordtest.Set, hours float64) []*condition {
	seen := map[string]bool{}
	var voices []string
	for _, c := range append(append([]wakewordtest.Clip(nil), set.Positives...), set.Paragraphs...) {
		if !c.Held && !seen[c.VoiceName()] {
			seen[c.VoiceName()] = true
			voices = append(voices, c.VoiceName())
		}
	}
	for _, v := range wakewordtest.Voices {
		for _, va := range wakewordtest.Variants {
			name := v
			if va != "" {
				name += "+" + va
			}
			if !seen[name] && tuningVariant(set, va) {
				seen[name] = true
				voices = append(voices, name)
			}
		}
	}
	rng := rand.New(rand.NewPCG(24, 7))
	speechWant := int(hours*3600*wakeword.Rate) * 4 / 5
	type job struct {
		voice      string
		wpm, pitch int
		text       string
		pcm        []int16
		err        error
		level, snr float64
		bg         int // 0 none, 1 music, 2 pink, 3 brown
	}
	// Clips of about 20 s (4–8 sentences of ~2.5 s): enough of them.
	n := speechWant / (20 * wakeword.Rate)
	jobs := make([]*job, n)
	for i := range jobs {
		var text []string
		for k := 4 + rng.IntN(5); k > 0; k-- {
			text = append(text, negSentence(rng))
		}
		jobs[i] = &job{voice: voices[(i*7)%len(voices)], wpm: 110 + 10*rng.IntN(11), pitch: 20 + 5*rng.IntN(15),
			text: strings.Join(text, " "), level: speechLevel - 8 + 16*rng.Float64(), snr: 20 * rng.Float64()}
		if rng.IntN(3) == 0 {
			jobs[i].bg = 1 + rng.IntN(3)
		}
	}
	t0 := time.Now()
	next := make(chan *job)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				j.pcm, j.err = set.Say(j.voice, j.wpm, j.pitch, j.text)
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	b.Logf("extra negatives: %d clips rendered in %s", len(jobs), time.Since(t0).Round(time.Second))
	noise := func(kind, n int) []float64 {
		switch kind {
		case 1:
			m := set.Music(rng, n)
			out := make([]float64, n)
			for k, v := range m {
				out[k] = float64(v)
			}
			return unitRMS(out)
		case 2:
			return wakewordtest.Pink(rng, n)
		}
		return wakewordtest.Brown(rng, n)
	}
	var acc []float64
	var out []*condition
	// flush makes a stream of 10 minutes (all that is left at the end).
	flush := func(end bool) {
		for len(acc) >= 10*60*wakeword.Rate || (end && len(acc) > 0) {
			n := min(len(acc), 10*60*wakeword.Rate)
			floor := wakewordtest.Pink(rng, n)
			for k := range n {
				acc[k] += floor[k] * math.Pow(10, -65.0/20) * 32768
			}
			c := &condition{name: fmt.Sprintf("extra negatives %d", len(out)+1), kind: "negative", pcm: toPCM(acc[:n])}
			c.duration = time.Duration(n) * time.Second / wakeword.Rate
			out = append(out, c)
			acc = append(acc[:0], acc[n:]...)
		}
	}
	for i, j := range jobs {
		if j.err != nil {
			b.Fatal(j.err)
		}
		g := math.Pow(10, (j.level-activeDB(j.pcm))/20)
		seg := make([]float64, len(j.pcm)+wakeword.Rate/4+rng.IntN(wakeword.Rate))
		for k, v := range j.pcm {
			seg[k] = g * float64(v)
		}
		j.pcm = nil
		if j.bg > 0 {
			nz := noise(j.bg, len(seg))
			a := math.Pow(10, (j.level-j.snr)/20) * 32768
			for k := range seg {
				seg[k] += a * nz[k]
			}
		}
		acc = append(acc, seg...)
		if i%5 == 4 {
			// Music or noise alone, 10–40 s.
			m := noise(1+rng.IntN(3), (10+rng.IntN(31))*wakeword.Rate)
			a := math.Pow(10, (speechLevel-10+16*rng.Float64())/20) * 32768
			for _, v := range m {
				acc = append(acc, a*v)
			}
		}
		flush(false)
	}
	flush(true)
	return out
}

// tuningVariant reports whether variant is in the tuning part (a
// positive of it is not held out).
func tuningVariant(set *wakewordtest.Set, variant string) bool {
	for _, c := range set.Positives {
		if c.Variant == variant {
			return !c.Held
		}
	}
	return false
}
