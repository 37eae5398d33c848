package conversation

import (
	"fmt"
	"math"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/config"
)

// loadEarcon reads a whole WAV or raw file as mono samples at rate; "" is
// none, config.EarconBuiltin the generated UnreachableEarcon.
func loadEarcon(path string, rate int) ([]int16, error) {
	switch path {
	case "":
		return nil, nil
	case config.EarconBuiltin:
		return UnreachableEarcon(rate), nil
	}
	pcm, err := audio.LoadFile(path, rate, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w; an earcon should be a short cue", err)
	}
	return pcm, nil
}

// The built-in "can't reach the server" earcon: a falling pair of notes,
// E5 then A4, soft-edged, half a second in all.
const (
	earconHighHz, earconLowHz = 660, 440
	earconHigh, earconGap     = 180e-3, 40e-3 // seconds
	earconLow                 = 300e-3
	earconAmp                 = 0.35 * math.MaxInt16
	earconFade                = 10e-3
)

// UnreachableEarcon generates the built-in earcon at rate.
func UnreachableEarcon(rate int) []int16 {
	note := func(hz, secs float64) []int16 {
		n := int(secs * float64(rate))
		fade := max(1, int(earconFade*float64(rate)))
		out := make([]int16, n)
		for i := range n {
			g := min(1, float64(i)/float64(fade), float64(n-1-i)/float64(fade))
			out[i] = int16(earconAmp * g * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
		}
		return out
	}
	pcm := note(earconHighHz, earconHigh)
	pcm = append(pcm, make([]int16, int(earconGap*float64(rate)))...)
	return append(pcm, note(earconLowHz, earconLow)...)
}
