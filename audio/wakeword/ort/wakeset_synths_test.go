package ort_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// synthSpeakers are the people behind the other synthesizers' voices
// (wakewordtest.OtherVoices: kal, awb, slt, us1, de2-en, bdl, en-GB, …)
// whose clips the own head trains on, named in
// AGENTHOST_WAKESET_HEAD_SYNTHS (comma-separated); the other synthesizers'
// part then measures only the others.
func synthSpeakers() []string {
	var out []string
	for _, s := range strings.Split(os.Getenv("AGENTHOST_WAKESET_HEAD_SYNTHS"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// bySpeaker is set with only the clips whose voice is (in) or is not
// (!in) one of speakers'.
func bySpeaker(set *wakewordtest.Set, speakers []string, in bool) *wakewordtest.Set {
	keep := func(list []wakewordtest.Clip) []wakewordtest.Clip {
		var out []wakewordtest.Clip
		for _, c := range list {
			said := false
			for _, s := range speakers {
				said = said || strings.Contains(c.Voice, s)
			}
			if said == in {
				out = append(out, c)
			}
		}
		return out
	}
	sub := *set
	sub.Positives, sub.Confusables, sub.Paragraphs = keep(set.Positives), keep(set.Confusables), keep(set.Paragraphs)
	return &sub
}

// synthTraining is the other synthesizers' conditions in the voices of
// synthSpeakers (none without them), minutes of them ordinary speech and
// music, named apart from the wake set's.
func synthTraining(b *testing.B, minutes int) []*condition {
	speakers := synthSpeakers()
	if len(speakers) == 0 {
		return nil
	}
	conds := conditions(b, bySpeaker(wakewordtest.OtherSynths(b), speakers, true), true, minutes)
	for _, c := range conds {
		c.name = "other synthesizers' " + c.name
	}
	return conds
}

// synthNegatives are hours (AGENTHOST_WAKESET_HEAD_SYNTH_HOURS) of
// negatives in the voices of synthSpeakers: the word lists' sentences,
// noise and music as moreNegatives, each clip in the next of those voices
// (none without them). The other synthesizers' set holds only four
// paragraphs a voice. Shifted (AGENTHOST_WAKESET_HEAD_SYNTH_SHIFTED_HOURS),
// each clip's voice is made into another speaker as synthPhrases makes the
// phrase's, so that a shift alone does not tell the phrase.
func synthNegatives(b *testing.B, set *wakewordtest.Set, hours float64, shifted bool) []*condition {
	if hours <= 0 {
		return nil
	}
	voices := synthVoices(b)
	if len(voices) == 0 {
		return nil
	}
	if !shifted {
		voice := func(i int) (string, []string) { return voices[i%len(voices)], nil }
		return negativeStreams(b, set, hours, rand.New(rand.NewPCG(24, 11)), "other synthesizers' negatives", voice, false)
	}
	rng := rand.New(rand.NewPCG(24, 14))
	voice := func(i int) (string, []string) { return voices[i%len(voices)], shiftedSpeaker(rng) }
	return negativeStreams(b, set, hours, rand.New(rand.NewPCG(24, 15)), "other synthesizers' shifted negatives", voice, false)
}

// synthConfusables are n clips (AGENTHOST_WAKESET_HEAD_SYNTH_NEAR) of near
// misses (the head's own and the tuning part's confusables) in the voices
// of synthSpeakers, clip i in the next of those voices, laid out as
// otherConfusables lays out its own (none without them); with
// AGENTHOST_WAKESET_HEAD_SYNTH_NEAR_CLEAN=1 only the clean ones, with
// AGENTHOST_WAKESET_HEAD_SYNTH_NEAR_SHIFTED=1 each voice shifted to another
// speaker as synthPhrases shifts the phrase's. Seeded.
func synthConfusables(b *testing.B, set *wakewordtest.Set, n int) []*condition {
	if n <= 0 {
		return nil
	}
	voices := synthVoices(b)
	if len(voices) == 0 {
		return nil
	}
	texts := nearMissTexts(set)
	shifted := os.Getenv("AGENTHOST_WAKESET_HEAD_SYNTH_NEAR_SHIFTED") == "1"
	pick := func(i int, rng *rand.Rand) (string, string, []string) {
		if shifted {
			return voices[i%len(voices)], "", shiftedSpeaker(rng)
		}
		return voices[i%len(voices)], "", nil
	}
	conds := otherSaid(b, set, n, rand.New(rand.NewPCG(24, 12)), "other synthesizers' near misses", "confusable", pick, func(_ string, i int) string {
		return texts[(i*5)%len(texts)]
	})
	if os.Getenv("AGENTHOST_WAKESET_HEAD_SYNTH_NEAR_CLEAN") == "1" {
		for _, c := range conds {
			if strings.HasSuffix(c.name, ": clean") {
				return []*condition{c}
			}
		}
		b.Fatal("synthConfusables: otherSaid laid out no clean condition")
	}
	return conds
}

// synthPhrases are n clips of the phrase (AGENTHOST_WAKESET_HEAD_SYNTH_PHRASES)
// in the voices of synthSpeakers, each made into another speaker by sox
// (shiftedSpeaker), laid out as otherPositives lays out its own (none
// without them). Seeded.
func synthPhrases(b *testing.B, set *wakewordtest.Set, n int) []*condition {
	if n <= 0 {
		return nil
	}
	voices := synthVoices(b)
	if len(voices) == 0 {
		return nil
	}
	pick := func(i int, rng *rand.Rand) (string, string, []string) {
		return voices[i%len(voices)], "", shiftedSpeaker(rng)
	}
	return otherSaid(b, set, n, rand.New(rand.NewPCG(24, 13)), "other synthesizers' shifted phrases", "positive", pick, func(string, int) string {
		return "hey jarvis"
	})
}

// shiftedSpeaker are sox effects that make a voice into another speaker's
// as far as a vocal tract's length and a speaking rate go: every formant
// and the pitch scaled by 0.82–1.22 (±350 cents, about the spread of
// adults' vocal tracts), the tempo by 0.9–1.1, a third of them with a
// pitch bend.
func shiftedSpeaker(rng *rand.Rand) []string {
	fx := []string{"pitch", fmt.Sprintf("%.0f", 700*rng.Float64()-350), "tempo", fmt.Sprintf("%.3f", 0.9+0.2*rng.Float64())}
	if rng.IntN(3) == 0 {
		// sox refuses a bend of 0 cents.
		up, down := (20+130*rng.Float64())*float64(1-2*rng.IntN(2)), (20+130*rng.Float64())*float64(1-2*rng.IntN(2))
		fx = append(fx, "bend", fmt.Sprintf("0.1,%.0f,0.2", up), fmt.Sprintf("0.35,%.0f,0.2", down))
	}
	return append(fx, "rate", "16000")
}

// synthVoices are the other voices (wakewordtest.OtherVoices) of
// synthSpeakers; none without them, and the benchmark stops when they
// name no voice.
func synthVoices(b *testing.B) []string {
	speakers := synthSpeakers()
	if len(speakers) == 0 {
		return nil
	}
	var voices []string
	for _, v := range wakewordtest.OtherVoices {
		for _, s := range speakers {
			if strings.Contains(v, s) {
				voices = append(voices, v)
				break
			}
		}
	}
	if len(voices) == 0 {
		b.Fatalf("AGENTHOST_WAKESET_HEAD_SYNTHS=%s: no other voice (wakewordtest.OtherVoices) is one of them", strings.Join(speakers, ","))
	}
	return voices
}

// TestSynthNegativesSaysWhenNoVoiceIsThePersonNamed: people named in
// AGENTHOST_WAKESET_HEAD_SYNTHS that no other voice is (a typo) stop the
// benchmark with a message. Found by review: synthNegatives took clip i
// in voices[i%len(voices)], and with no voice the benchmark panicked
// (integer divide by zero).
func TestSynthNegativesSaysWhenNoVoiceIsThePersonNamed(t *testing.T) {
	t.Setenv("AGENTHOST_WAKESET_HEAD_SYNTHS", "nobody-at-all")
	r := testing.Benchmark(func(b *testing.B) {
		synthNegatives(b, nil, 0.01, false)
	})
	if r.N != 0 {
		t.Errorf("synthNegatives went on without a voice (%d runs)", r.N)
	}
}
