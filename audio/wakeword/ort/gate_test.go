package ort_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/gate"
	"github.com/agenthost/agenthost/audio/wakeword"
)

// fanNoise is pink noise low-passed at about 500 Hz, at dbfs (RMS).
func fanNoise(rng *rand.Rand, n int, dbfs float64) []int16 {
	v := make([]float64, n)
	var b0, b1, b2, y, sum float64
	for i := range v {
		w := rng.NormFloat64()
		b0 = 0.99765*b0 + w*0.0990460
		b1 = 0.96300*b1 + w*0.2965164
		b2 = 0.57000*b2 + w*1.0526913
		y += 0.18 * (b0 + b1 + b2 + w*0.1848 - y)
		v[i] = y
		sum += y * y
	}
	g := math.Pow(10, dbfs/20) * 32768 / math.Sqrt(sum/float64(n))
	out := make([]int16, n)
	for i, x := range v {
		out[i] = clamp(g * x)
	}
	return out
}

type scoreAt struct {
	model int
	end   int64
}

// scoresOf runs chunks (position, audio) through a stream, starting it
// again at every gap as the detector does, and returns every score.
func scoresOf(t *testing.T, rt wakeword.Runtime, feed func(emit func(int64, []int16))) map[scoreAt]float32 {
	t.Helper()
	s := wakeword.NewStream(rt)
	out := map[scoreAt]float32{}
	var sc []wakeword.Score
	var err error
	feed(func(pos int64, pcm []int16) {
		if pos != s.Pos() {
			s.Reset(pos)
		}
		if sc, err = s.Feed(pcm, sc[:0]); err != nil {
			t.Fatal(err)
		}
		for _, v := range sc {
			out[scoreAt{v.Model, v.End}] = v.Value
		}
	})
	return out
}

// TestTheGateKeepsEveryScore: wake phrases (and other speech) said after
// 8 s of a quiet room each, over a hiss at -65 dBFS and over a fan at -40
// dBFS: behind the gate, the models score every step whose audio holds a
// sound exactly as in the continuous stream (the same value, bit for bit,
// at the same position), and nothing else; so they detect the same
// phrases, at the same positions, with the same scores.
func TestTheGateKeepsEveryScore(t *testing.T) {
	rt, names := runtime(t)
	rng := rand.New(rand.NewPCG(11, 12))
	filler := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-us", WPM: 160}, "I put the kettle on and read the paper.")
	phrases := map[string]string{"hey_jarvis": "hey jarvis", "alexa": "alexa", "hey_mycroft": "hey my croft"}
	var stream []int16
	var phraseCount int
	for _, room := range []string{"hiss", "fan"} {
		from := len(stream)
		for _, model := range []string{"hey_jarvis", "alexa", "hey_mycroft"} {
			for i, voice := range []string{"en-gb", "en-gb-x-rp"} {
				stream = append(stream, make([]int16, samples(8*time.Second))...)
				if i == 1 {
					stream = append(stream, filler...)
					stream = append(stream, make([]int16, samples(700*time.Millisecond))...)
				}
				stream = append(stream, audiotest.Say(t, audiotest.SpeechOptions{Voice: voice, WPM: 140}, phrases[model])...)
				phraseCount++
			}
		}
		stream = append(stream, make([]int16, samples(8*time.Second))...)
		if room == "hiss" {
			mix(stream, noise(rng, len(stream)-from, -65), from, 1)
		} else {
			mix(stream, fanNoise(rng, len(stream)-from, -40), from, 1)
		}
	}
	const frame = 960
	whole := scoresOf(t, rt, func(emit func(int64, []int16)) {
		for i := 0; i < len(stream); i += frame {
			emit(int64(i), stream[i:min(i+frame, len(stream))])
		}
	})
	g, err := gate.New(gate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	handed := 0
	gated := scoresOf(t, rt, func(emit func(int64, []int16)) {
		for i := 0; i < len(stream); i += frame {
			g.Push(int64(i), stream[i:min(i+frame, len(stream))], func(pos int64, pcm []int16) {
				handed += len(pcm)
				emit(pos, pcm)
			})
		}
	})
	for k, v := range gated {
		if w, ok := whole[k]; !ok || w != v {
			t.Errorf("%s at %d scored %v behind the gate, %v (%v) in the whole stream", names[k.model], k.end, v, w, ok)
		}
	}
	missed, high := 0, 0
	for k, v := range whole {
		if v >= 0.01 {
			high++
			if _, ok := gated[k]; !ok {
				missed++
				t.Errorf("%s at %d scored %v in the whole stream, not at all behind the gate", names[k.model], k.end, v)
			}
		}
	}
	detect := func(scores map[scoreAt]float32) []string {
		var out []string
		quiet := map[int]int64{}
		for end := int64(0); end <= int64(len(stream)); end += wakeword.Hop {
			for m := range names {
				if v, ok := scores[scoreAt{m, end}]; ok && v >= 0.5 && end >= quiet[0] {
					out = append(out, fmt.Sprintf("%s@%d=%v", names[m], end, v))
					quiet[0] = end + int64(wakeword.Refractory.Seconds()*rate)
				}
			}
		}
		return out
	}
	a, b := detect(whole), detect(gated)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("detections of the whole stream %v, behind the gate %v", a, b)
	}
	t.Logf("%d phrases in %s: %d detections, the same behind the gate; %d of %d scores ≥ 0.01 missed; the gate handed on %.1f%% of the audio, opened %d times",
		phraseCount, time.Duration(len(stream))*time.Second/rate, len(a), missed, high, 100*float64(handed)/float64(len(stream)), g.Opened)
}
