package ort_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agenthost/agenthost/audio/echoroom"
)

// TestCancelledKeepsThePlacesOfItsSamples: cancelled hands back the
// microphone where it was, sample for sample, so that a clip's place
// (placed.start, phraseAt) names its place in what the head hears (the
// canceller gives each frame back one frame later); and cancels all of it,
// the last frame that is not whole too (each room of inRooms ends
// anywhere), not leaving it the echo as it came.
func TestCancelledKeepsThePlacesOfItsSamples(t *testing.T) {
	w := roomsOf(4102, echoroom.Living)[0]
	n := 6*16000 + 77
	rng := rand.New(rand.NewPCG(1, 2))
	far, near := make([]float64, n), make([]float64, n)
	for i := range far {
		far[i] = 0.05 * 32768 * rng.NormFloat64()
	}
	for i := 3 * 16000; i < 4*16000; i++ {
		near[i] = 0.2 * 32768 * math.Sin(0.3*float64(i)) * rng.Float64()
	}
	out := cancelled(t, w, toPCM(far), toPCM(near))
	if len(out) != n {
		t.Fatalf("%d samples out of %d", len(out), n)
	}
	best, lag := math.Inf(-1), 0
	for l := -400; l <= 400; l++ {
		var s float64
		for i := 3 * 16000; i < 4*16000; i++ {
			s += near[i] * float64(out[i+l])
		}
		if s > best {
			best, lag = s, l
		}
	}
	if lag != 0 {
		t.Errorf("the near speech comes out %d samples late", lag)
	}
	rms := func(p []int16) float64 {
		var e float64
		for _, v := range p {
			e += float64(v) * float64(v)
		}
		return math.Sqrt(e / float64(len(p)))
	}
	end, before := rms(out[n-77:]), rms(out[n-16000:n-1000])
	if end > 4*before+10 {
		t.Errorf("the last 77 samples are at RMS %.0f, the second before them at %.0f: not cancelled", end, before)
	}
}
