package wakeword

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// EnrollPrompts are what the owner reads at enrollment besides the phrase:
// ordinary speech in the owner's voice, some of it near the phrase
// ("hey" and a name), for the verifier to learn what is not the phrase.
// None is one of the wake set's confusables (BenchmarkWakeSetVerified
// measures those).
var EnrollPrompts = []string{
	"Hey there, how are you today?",
	"Hey Martin, dinner is ready.",
	"Hey Julia, have you seen my keys?",
	"The garage door is still open.",
	"Hey Dennis, are you coming with us?",
	"Put the jam back in the cupboard.",
	"Can you play the radio a little louder?",
	"Hey you, come and look at this.",
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
	for i, p := range e.Phrases {
		ws, err := Windows(rt, e.Model, step, padded(p, int64(i)), nil)
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
	for i, o := range e.Others {
		ws, err := Windows(rt, e.Model, step, padded(o, int64(1000+i)), func(score float32, end int64) bool {
			return end%Hop == 0 || float64(score) >= DefaultCandidate
		})
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			neg = append(neg, w.Emb)
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

// padded is p after enrollLead of faint noise and before 0.3 s of it.
func padded(p []int16, seed int64) []int16 {
	rng := rand.New(rand.NewPCG(uint64(seed), 24))
	out := make([]int16, enrollLead+len(p)+Rate*3/10)
	for i := range out {
		out[i] = int16(rng.IntN(5) - 2)
	}
	for i, v := range p {
		out[enrollLead+i] = v
	}
	return out
}
