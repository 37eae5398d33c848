package wakeword

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
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
// e.Model) from e. A take of the phrase the model does not hear (no score
// of DefaultCandidate) is left out (the verifier's Phrases counts those
// used); fewer than MinPhrases heard is an error that names them.
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
	var unheard []string
	heard := 0
	for i, p := range e.Phrases {
		from, to := voicedSpan(p)
		for _, f := range []float64{0.55, 0.7} {
			others = append(others, p[:from+int(f*float64(to-from))])
		}
		for k := range enrollRooms {
			ws, err := Windows(rt, e.Model, step, padded(p, int64(i), k), nil)
			if err != nil {
				return nil, err
			}
			sort.SliceStable(ws, func(a, b int) bool { return ws[a].Score > ws[b].Score })
			if len(ws) == 0 || float64(ws[0].Score) < DefaultCandidate {
				if k == 0 {
					unheard = append(unheard, fmt.Sprintf("take %d (best score %.2f)", i+1, bestOf(ws)))
				}
				continue
			}
			if k == 0 {
				heard++
			}
			for _, w := range ws[:min(len(ws), windowsPerPhrase)] {
				if float64(w.Score) >= DefaultCandidate {
					pos = append(pos, w.Emb)
				}
			}
		}
	}
	if heard < MinPhrases {
		return nil, fmt.Errorf("the model heard the phrase in %d of %d takes (%d needed; not heard: %s, a score of %.2f is needed): say it again, nearer the microphone, or this voice cannot enroll",
			heard, len(e.Phrases), MinPhrases, strings.Join(unheard, ", "), DefaultCandidate)
	}
	// The other speech in one stream per noise floor, 1 s of quiet between
	// recordings, scored every 40 ms: a window across two is a negative too.
	others = append(append([][]int16(nil), e.Others...), others...)
	var all []int16
	for _, o := range others {
		all = append(append(all, o...), make([]int16, Rate)...)
	}
	for k := range enrollRooms {
		ws, err := Windows(rt, e.Model, Hop/2, padded(all, 1000, k), nil)
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
	v.Model, v.Window, v.Phrases, v.Negatives = e.Name, rt.Window(e.Model), heard, len(neg)
	v.Created = time.Now().UTC().Truncate(time.Second)
	return v, v.Check()
}

func bestOf(ws []Window) float32 {
	if len(ws) == 0 {
		return 0
	}
	return ws[0].Score
}

// enrollRooms are how each recording is heard: as it is under a faint
// floor (white, -65 dBFS), under pink noise 10 dB below its speech, and
// in a reverberant room (RT60 about 0.5 s) over a -60 dBFS floor. A
// verifier trained on the takes alone turned the phrase away in noise
// and reverberation (BenchmarkWakeSetVerified).
var enrollRooms = []string{"quiet", "noise", "reverb"}

// padded is p after enrollLead of quiet and before 0.3 s of it, heard as
// enrollRooms[room] says.
func padded(p []int16, seed int64, room int) []int16 {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(24+room)))
	x := make([]float64, enrollLead+len(p)+Rate*3/10)
	for i, v := range p {
		x[enrollLead+i] = float64(v)
	}
	floor := -65.0
	switch enrollRooms[room] {
	case "noise":
		floor = math.Inf(-1)
		level := activeLevel(p)
		a := math.Pow(10, -10.0/20) * level
		var b0, b1, b2 float64
		for i := range x {
			w := rng.NormFloat64()
			b0 = 0.99765*b0 + w*0.0990460
			b1 = 0.96300*b1 + w*0.2965164
			b2 = 0.57000*b2 + w*1.0526913
			x[i] += a * (b0 + b1 + b2 + w*0.1848) / 3.5
		}
	case "reverb":
		floor = -60
		x = reverb(x)
	}
	out := make([]int16, len(x))
	a := math.Pow(10, floor/20) * 32768
	for i, v := range x {
		v += a * rng.NormFloat64()
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return out
}

// activeLevel is the RMS of p's 10 ms frames within 30 dB of its loudest.
func activeLevel(p []int16) float64 {
	from, to := voicedSpan(p)
	var e float64
	for _, v := range p[from:to] {
		e += float64(v) * float64(v)
	}
	return math.Sqrt(e / float64(max(1, to-from)))
}

// reverb is x through a Schroeder reverberator (four combs, two
// all-passes; RT60 about 0.5 s), half dry, half wet, at the same level.
func reverb(x []float64) []float64 {
	combs := []int{1116 * Rate / 44100, 1188 * Rate / 44100, 1277 * Rate / 44100, 1356 * Rate / 44100}
	wet := make([]float64, len(x))
	for _, d := range combs {
		g := math.Pow(10, -3*float64(d)/(0.5*Rate)) // -60 dB in 0.5 s
		buf := make([]float64, d)
		for i, v := range x {
			y := buf[i%d]
			buf[i%d] = v + g*y
			wet[i] += y / 4
		}
	}
	for _, d := range []int{225 * Rate / 44100, 556 * Rate / 44100} {
		buf := make([]float64, d)
		for i, v := range wet {
			b := buf[i%d]
			y := -0.5*v + b
			buf[i%d] = v + 0.5*b
			wet[i] = y
		}
	}
	var ex, ew float64
	for i := range x {
		ex += x[i] * x[i]
		ew += wet[i] * wet[i]
	}
	g := math.Sqrt(ex / max(ew, 1e-9))
	out := make([]float64, len(x))
	for i := range x {
		out[i] = (x[i] + g*wet[i]) / math.Sqrt2
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
