package ort_test

import (
	"math/rand/v2"
	"strings"
	"testing"

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
	voices := tuningVoices(set)
	voice := func(i int) (string, []string) { return voices[(i*7)%len(voices)], nil }
	return negativeStreams(b, set, hours, rand.New(rand.NewPCG(24, 7)), "extra negatives", voice, false)
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
