package wakeword

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// EnrollPrompts are what the owner says at enrollment besides the phrase:
// near misses ("hey" and other names, words that share its sounds) and
// ordinary speech, in the owner's voice, for the verifier to learn what is
// not the phrase. None is one of the wake set's confusables
// (BenchmarkWakeSetVerified measures those).
var EnrollPrompts = []string{
	"hey Martin", "hey Julia", "hey Dennis", "hey there", "hey Jeeves", "hey Janet", "hey Mervin", "hey Carla",
	"hey Jenkins", "hey Harvard", "hey Parvis", "jar vase", "hey Barney", "hey Carmen", "hey Darwin",
	"Hey there, how are you today?", "The garage door is still open.",
}

// Enrollment is what a verifier is trained on, 16 kHz mono.
type Enrollment struct {
	Model int    // the wake model's index in the runtime
	Name  string // its name (ModelName)
	// Phrases are recordings of the owner saying the model's phrase, each
	// with little else in it.
	Phrases [][]int16
	// Others are the owner's other speech (EnrollPrompts) and the room's
	// own sound.
	Others [][]int16
}

// Enrollment's bounds.
const (
	MinPhrases = 3
	MaxPhrases = 20
	// enrollLead is the quiet put before each recording: a fresh stream
	// scores from about 2 s in.
	enrollLead = 2 * Rate * 11 / 10
	// windowsPerPhrase: the best-scoring windows of each phrase taken
	// as positives.
	windowsPerPhrase = 8
	// maxNegatives bounds the negative windows (training time).
	maxNegatives = 1500
)

// Enroll trains the owner's verifier of one wake model (rt's model
// e.Model) from e. The error says which recording did not serve.
func Enroll(rt Runtime, e Enrollment) (*Verifier, error) {
	if len(e.Phrases) < MinPhrases || len(e.Phrases) > MaxPhrases {
		return nil, fmt.Errorf("%d recordings of the phrase; %d…%d are needed", len(e.Phrases), MinPhrases, MaxPhrases)
	}
	if len(e.Others) == 0 {
		return nil, errors.New("no recording of other speech: the verifier needs to hear what is not the phrase")
	}
	if e.Model < 0 || e.Model >= rt.Models() {
		return nil, fmt.Errorf("model %d of %d", e.Model, rt.Models())
	}
	step := Hop / 4
	var pos, neg [][]float32
	// Each recording as it is and under more noise; the phrases cut short
	// (most of "hey jarv") are negatives too.
	var others [][]int16
	for i, p := range e.Phrases {
		from, to := voicedSpan(p)
		for _, f := range []float64{0.55, 0.7} {
			others = append(others, p[:from+int(f*float64(to-from))])
		}
		for k, db := range enrollNoise {
			ws, err := Windows(rt, e.Model, step, padded(p, int64(i), db, int64(k)), nil)
			if err != nil {
				return nil, err
			}
			sort.SliceStable(ws, func(a, b int) bool { return ws[a].Score > ws[b].Score })
			if len(ws) == 0 || float64(ws[0].Score) < DefaultCandidate {
				best := float32(0)
				if len(ws) > 0 {
					best = ws[0].Score
				}
				return nil, fmt.Errorf("recording %d of the phrase: the model did not hear it (best score %.2f, %.2f needed): say it again, nearer the microphone", i+1, best, DefaultCandidate)
			}
			for _, w := range ws[:min(len(ws), windowsPerPhrase)] {
				if float64(w.Score) >= DefaultCandidate {
					pos = append(pos, w.Emb)
				}
			}
		}
	}
	for i, o := range append(append([][]int16(nil), e.Others...), others...) {
		for k, db := range enrollNoise {
			ws, err := Windows(rt, e.Model, step, padded(o, int64(1000+i), db, int64(k)), func(score float32, end int64) bool {
				return end%Hop == 0 || float64(score) >= DefaultCandidate
			})
			if err != nil {
				return nil, err
			}
			for _, w := range ws {
				neg = append(neg, w.Emb)
			}
		}
	}
	if len(neg) > maxNegatives {
		rng := rand.New(rand.NewPCG(uint64(len(neg)), 7))
		rng.Shuffle(len(neg), func(a, b int) { neg[a], neg[b] = neg[b], neg[a] })
		neg = neg[:maxNegatives]
	}
	v, err := TrainVerifier(pos, neg, TrainOptions{})
	if err != nil {
		return nil, err
	}
	v.Model, v.Window, v.Phrases, v.Negatives = e.Name, rt.Window(e.Model), len(e.Phrases), len(neg)
	v.Created = time.Now().UTC().Truncate(time.Second)
	return v, v.Check()
}

// enrollNoise: each recording is heard under white noise at these dBFS.
var enrollNoise = []float64{-65, -50}

// padded is p after enrollLead of quiet and before 0.3 s of it, all under
// white noise at db dBFS.
func padded(p []int16, seed int64, db float64, k int64) []int16 {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(24+k)))
	a := math.Pow(10, db/20) * 32768
	out := make([]int16, enrollLead+len(p)+Rate*3/10)
	for i := range out {
		v := a * rng.NormFloat64()
		if j := i - enrollLead; j >= 0 && j < len(p) {
			v += float64(p[j])
		}
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return out
}

// voicedSpan is the span of p's 10 ms frames within 30 dB of its loudest.
func voicedSpan(p []int16) (int, int) {
	var pw []float64
	top := 0.0
	for i := 0; i+melFrame <= len(p); i += melFrame {
		var e float64
		for _, v := range p[i : i+melFrame] {
			e += float64(v) * float64(v)
		}
		pw = append(pw, e)
		top = max(top, e)
	}
	from, to := -1, 0
	for i, e := range pw {
		if e > 0 && e >= top/1000 {
			if from < 0 {
				from = i
			}
			to = i + 1
		}
	}
	if from < 0 {
		return 0, len(p)
	}
	return from * melFrame, to * melFrame
}
