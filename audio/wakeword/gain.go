package wakeword

import "math"

// Gain is an automatic gain control before the models: it follows the
// level of the loudest recent sound (fast up, slow down) and scales the
// audio so that level sits at GainTarget, by at most GainMax.
type Gain struct {
	env  float64 // the followed level (RMS of 10 ms)
	gain float64 // the gain applied at the end of the last frame
}

// The gain control's settings.
const (
	GainTarget  = -20.0 // dBFS the followed level is brought to
	GainMax     = 30.0  // dB at most
	gainFloor   = -70.0 // dBFS below which the level is not followed down
	gainAttack  = 0.5   // share of the way up per 10 ms
	gainRelease = 0.995 // kept per 10 ms on the way down (about 2 s)
)

// NewGain returns a gain control at unity gain.
func NewGain() *Gain {
	return &Gain{env: math.Pow(10, GainTarget/20) * 32768, gain: 1}
}

// Apply scales pcm in place.
func (g *Gain) Apply(pcm []int16) {
	floor := math.Pow(10, gainFloor/20) * 32768
	target := math.Pow(10, GainTarget/20) * 32768
	most := math.Pow(10, GainMax/20)
	for i := 0; i < len(pcm); i += 160 {
		f := pcm[i:min(i+160, len(pcm))]
		var e float64
		for _, v := range f {
			e += float64(v) * float64(v)
		}
		rms := math.Sqrt(e / float64(len(f)))
		if rms > g.env {
			g.env += gainAttack * (rms - g.env)
		} else {
			g.env = max(floor, gainRelease*g.env+(1-gainRelease)*rms)
		}
		want := min(most, target/g.env)
		for k, v := range f {
			a := g.gain + (want-g.gain)*float64(k+1)/float64(len(f))
			f[k] = int16(max(-32768, min(32767, math.Round(a*float64(v)))))
		}
		g.gain = want
	}
}
