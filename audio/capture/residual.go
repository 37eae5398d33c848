package capture

import (
	"math"
	"slices"

	"github.com/agenthost/agenthost/audio/internal/fft"
)

// residual is the echo canceller's residual echo suppressor: what the
// linear filter leaves of the echo (the reverberation beyond its tail, the
// loudspeaker's distortion, and all of it while the filter learns or after
// the path changed) is estimated per band from what was played, and taken
// off with a spectral gain.
//
// The reference's band powers pass through an exponential decay (a room's
// reverberation, RT60 0.5 s); two gains per band, ratios of powers smoothed
// over about half a second while the far end plays alone, turn that into
// the echo's power at the microphone and in the filter's output. The first
// tells near speech (the microphone well above it) from echo; the second is
// the residual the gain takes off. While someone speaks, the second may
// only come down: near speech never teaches the suppressor that it is echo.
type residual struct {
	frame, n int // hop and FFT size
	ft       *fft.FFT
	win      []float64 // sqrt-Hann analysis and synthesis, 2 frames long
	inE, inX []float64 // the last two frames of the filter's output, the reference
	inM      []float64 // and of the microphone
	olap     []float64 // synthesis overlap
	buf      []complex128
	bands    [][2]int

	px, pm, pe []float64 // per band: this frame's powers
	sx         []float64 // per band: the reference's power through the decay
	gm, ge, gd []float64 // per band: smoothed microphone, output and sx powers
	gain       []float64 // per band
	gBin       []float64 // per bin
	trained    int       // frames the far end played alone
	hang       int       // frames the near speech is still taken to last
	floor      float64   // the microphone's noise floor (power of a frame)
	talking    bool      // whether this frame was taken for near speech

	// Before the echo's delay is found (blind), near speech is told from
	// echo against the loudest the echo could be at any lag of the search's
	// range: per band, the most of the reference's decayed power over the
	// last span frames, times a gain learnt while the far end plays alone.
	blind    bool        // set by the canceller: the delay is not yet known
	span     int         // frames of lag the echo may come after the reference
	ring     [][]float64 // the last span frames' sx, per band
	ringAt   int
	env      []float64 // per band: the most of ring
	bm, bd   []float64 // per band: smoothed microphone and env powers
	bTrain   int       // frames the far end played alone, blind
	bFar     int       // frames the far end played, blind
	bHang    int
	bTalking bool // whether this frame was taken for near speech, blind

	// The canceller's learning hold, per band: set by the canceller for the
	// frame (the depth, 0 for none); bandHeld reports that the suppressor
	// applied it (a model to hold against): each band whose microphone
	// stands well above its echo expected passes, the others are held down.
	// Frames taken for near speech pass whole, but not after the echo path
	// changed: the model is the old path's, and a word through the new one
	// may stand above it; nor, blind, frames only the unaligned model took
	// for it (see holdModel).
	holdBy   float64
	changed  bool // the hold follows a change of the echo path: near speech too is held per band
	bandHeld bool
	louder   bool    // the microphone stands resLouder above the echo expected (aligned) this frame
	unheld   float64 // the output's power without the hold over with it (≥ 1)

	// During the first hold, a young filter that takes
	// the echo down tells near speech by its own output: per band, the
	// output over the microphone, smoothed (kept), and the least of that
	// lately (kept falls at once and rises by youngRise a frame: the
	// filter improves, and a voice lifts the ratio for a while only). A
	// frame whose output stands youngAbove above the residual so expected
	// is near speech, if the microphone stands above its echo in the bands
	// where the output stands out (a tune's new notes, which the young
	// filter has yet to learn, lift its output as much, but not the
	// microphone above the echo expected there) and the output is not
	// correlated with the filter's echo estimate (as when the filter has
	// yet to learn what the echo now holds). Before the delay is found,
	// too: a filter whose window does not hold the echo takes nothing off,
	// and its output never stands above the residual so expected. Such a
	// frame passes the hold whole.
	ratio, least []float64
	young        bool // this frame was taken for near speech so
	starting     bool // set by the canceller: the hold is its first since the start
}

const (
	resDecay   = 0.76 // per frame: an RT60 of 0.5 s
	resSmooth  = 0.98 // per frame: about half a second
	resOver    = 20.0 // over-estimation of the residual in the gain (13 dB)
	resOverDT  = 3.0  // and while near speech is taken to be there, or the model is young, or (the hold over) in a band where it is heard
	resSure    = 300  // frames of far end alone before the model is trusted with resOver
	resFloor   = 0.01 // the most taken off a band: −40 dB
	resTalk    = 2.5  // the microphone this far above its echo: near speech
	resTrained = 50   // frames of far end before near speech is looked for
	resHang    = 10   // frames near speech is taken to last after it was seen
	resKept    = 0.25 // near speech: the filter takes at most 6 dB off the microphone
	resBand    = 3.0  // during the hold, a band's microphone this far above its echo passes
	resLouder  = 1.26 // or, in a frame this far above its echo (1 dB),
	resAbove   = 1.4  // a band this far above its echo (1.5 dB) whose filter's output stands resBand above the residual
)

func newResidual(frame, span int) *residual {
	n := 1
	for n < 2*frame {
		n <<= 1
	}
	r := &residual{frame: frame, n: n, ft: fft.New(n), buf: make([]complex128, n), span: max(1, span)}
	r.win = make([]float64, 2*frame)
	for i := range r.win {
		r.win[i] = math.Sqrt(0.5 - 0.5*math.Cos(2*math.Pi*(float64(i)+0.5)/float64(2*frame)))
	}
	r.inE, r.inX, r.inM = make([]float64, 2*frame), make([]float64, 2*frame), make([]float64, 2*frame)
	r.olap = make([]float64, frame)
	// Bands: 125 Hz wide up to 500 Hz, then a quarter of their frequency
	// (at 16 kHz; the layout only needs to be reasonable at other rates).
	bins := n/2 + 1
	hz := 16000.0 / float64(n)
	for lo := 0; lo < bins; {
		w := max(125, float64(lo)*hz/4)
		hi := min(bins, lo+max(1, int(w/hz)))
		if bins-hi < int(w/hz)/2 {
			hi = bins
		}
		r.bands = append(r.bands, [2]int{lo, hi})
		lo = hi
	}
	nb := len(r.bands)
	for _, p := range []*[]float64{&r.px, &r.pm, &r.pe, &r.sx, &r.gm, &r.ge, &r.gd, &r.gain, &r.env, &r.bm, &r.bd} {
		*p = make([]float64, nb)
	}
	r.ring = make([][]float64, r.span)
	for i := range r.ring {
		r.ring[i] = make([]float64, nb)
	}
	for b := range r.gain {
		r.gain[b] = 1
	}
	r.ratio, r.least = make([]float64, nb), make([]float64, nb)
	r.restart()
	r.gBin = make([]float64, bins)
	r.unheld = 1
	return r
}

const (
	youngSmooth = 0.7   // per frame: the ratio of output to microphone, smoothed over about 30 ms
	youngRise   = 1.005 // per frame: how fast its least lately rises (2 dB a second)
	youngAbove  = 3.0   // the output this far above the residual expected (5 dB),
	youngBand   = 5.0   // in the bands where it stands this far above it (7 dB)
	youngMic    = 2.0   // the microphone this far above its echo (3 dB),
	youngBlind  = 1.0   // (before the delay is found, above the loudest it could be at any lag)
	youngCorr   = 0.3   // and the output's correlation with the echo estimate below this: near speech
)

// restart forgets how far the filter took the echo down: it starts again.
func (r *residual) restart() {
	for b := range r.ratio {
		r.ratio[b], r.least[b] = 1, 1
	}
}

// youngTalk tracks the filter's output over its microphone per band (mic
// and out one frame of each, this frame's powers in r.pm and r.pe) and
// reports whether, during the first hold, the frame holds near speech by
// it (see young).
func (r *residual) youngTalk(sumE float64, mic, out []int16) bool {
	var res, inM, inEcho float64
	for b := range r.bands {
		if r.pm[b] > 0 {
			r.ratio[b] = youngSmooth*r.ratio[b] + (1-youngSmooth)*min(1, r.pe[b]/r.pm[b])
			r.least[b] = min(r.least[b]*youngRise, r.ratio[b])
		}
		res += r.least[b] * r.pm[b]
		if r.pe[b] <= youngBand*r.least[b]*r.pm[b] {
			continue
		}
		switch {
		case r.blind && r.bd[b] > 0:
			inM += r.pm[b]
			inEcho += r.bm[b] / r.bd[b] * r.env[b]
		case !r.blind && r.gd[b] > 0:
			inM += r.pm[b]
			inEcho += r.gm[b] / r.gd[b] * r.sx[b]
		}
	}
	above := youngMic
	if r.blind {
		above = youngBlind
	}
	if r.holdBy <= 0 || !r.starting || r.changed || r.trained < resTrained || r.blind && r.bTrain < resTrained || sumE <= youngAbove*res+4*r.floor || inM <= above*inEcho {
		return false
	}
	var ey, ee, yy float64
	for i, v := range out {
		x, y := float64(v), float64(mic[i])-float64(v)
		ey += x * y
		ee += x * x
		yy += y * y
	}
	return ey < youngCorr*math.Sqrt(ee*yy)
}

// bandPowers puts x (two frames), windowed, through the FFT into r.buf and
// adds up each band's power into p.
func (r *residual) bandPowers(x, p []float64) {
	for i := range r.buf {
		r.buf[i] = 0
		if i < len(x) {
			r.buf[i] = complex(x[i]*r.win[i], 0)
		}
	}
	r.ft.Forward(r.buf)
	for b, bd := range r.bands {
		var s float64
		for _, c := range r.buf[bd[0]:bd[1]] {
			s += real(c)*real(c) + imag(c)*imag(c)
		}
		p[b] = s
	}
}

// run suppresses the residual echo in out (the linear filter's output, one
// frame, in place; it comes out one frame later), given mic (the filter's
// input) and play (the reference the filter was given).
func (r *residual) run(mic, play, out []int16) {
	f := r.frame
	for _, s := range []struct {
		buf []float64
		x   []int16
	}{{r.inE, out}, {r.inX, play}, {r.inM, mic}} {
		copy(s.buf, s.buf[f:])
		for i, v := range s.x {
			s.buf[f+i] = float64(v)
		}
	}
	r.bandPowers(r.inX, r.px)
	r.bandPowers(r.inM, r.pm)
	r.bandPowers(r.inE, r.pe) // last: r.buf keeps the output's spectrum
	var far, sumM, sumE, expect float64
	for b := range r.bands {
		r.sx[b] = resDecay*r.sx[b] + r.px[b]
		far += r.px[b]
		sumM += r.pm[b]
		sumE += r.pe[b]
		if r.gd[b] > 0 {
			expect += r.gm[b] / r.gd[b] * r.sx[b]
		}
	}
	if r.floor == 0 || sumM < r.floor {
		r.floor = sumM
	} else {
		r.floor *= 1.001
	}
	talk := held(&r.hang, r.trained >= resTrained && r.nearSpeech(sumM, sumE, expect))
	r.young = far > 0 && sumM > 0 && r.youngTalk(sumE, mic, out) && !talk
	if r.young {
		talk = true
	}
	r.louder = sumM > resLouder*expect
	r.bTalking = r.blind && r.blindTalk(far, sumM, sumE, r.young)
	if r.bTalking {
		talk = true
	}
	if far > 0 && !talk {
		r.trained++
	}
	r.talking = talk
	hm, hd, hx := r.holdModel(talk)
	r.bandHeld = hm != nil
	var pre, post float64
	for b, bd := range r.bands {
		if far > 0 {
			pm, pe := r.pm[b], min(r.pe[b], r.pm[b])
			if talk && r.gd[b] > 0 {
				// The residual's model only comes down; the microphone's
				// climbs at most at the test's ratio, so that a model
				// started too low (before the echo arrived) cannot hold
				// "near speech" for good.
				pm = min(pm, resTalk*r.gm[b]/r.gd[b]*r.sx[b])
				pe = min(pe, r.ge[b]/r.gd[b]*r.sx[b])
			}
			r.gm[b] = resSmooth*r.gm[b] + pm
			r.ge[b] = resSmooth*r.ge[b] + pe
			r.gd[b] = resSmooth*r.gd[b] + r.sx[b]
		}
		g := 1.0
		if r.pe[b] > 0 && r.gd[b] > 0 {
			res := r.ge[b] / r.gd[b] * r.sx[b]
			if r.young {
				res = min(res, r.least[b]*r.pm[b]) // the model learnt from the voice
			}
			// Gently while someone may be talking over it: near speech
			// the young model cannot yet tell from echo is not eaten; and,
			// once the hold is over, in a band where it is heard although
			// the frame is not taken for it (over music as loud as the
			// voice, many of its frames are not).
			over := resOverDT
			if !talk && r.trained >= resSure && (r.holdBy > 0 || !r.nearBand(b)) {
				over = resOver
			}
			g = max(resFloor, 1-over*res/r.pe[b])
		}
		// Down at once, up over about 20 ms.
		if g < r.gain[b] {
			r.gain[b] = g
		} else {
			r.gain[b] += 0.5 * (g - r.gain[b])
		}
		gb := r.gain[b]
		pre += gb * gb * r.pe[b]
		if r.bandHeld && !r.passesHold(b, hm, hd, hx) {
			gb *= r.holdBy
		}
		post += gb * gb * r.pe[b]
		for k := bd[0]; k < bd[1]; k++ {
			r.gBin[k] = gb
		}
	}
	r.unheld = 1
	if post > 0 {
		r.unheld = pre / post
	}
	// The gains on the output's spectrum, back (the inverse FFT as the
	// forward one of the conjugate) and overlap-added.
	for k := range r.buf {
		kk := k
		if k > r.n/2 {
			kk = r.n - k
		}
		r.buf[k] = complex(real(r.buf[k])*r.gBin[kk], -imag(r.buf[k])*r.gBin[kk])
	}
	r.ft.Forward(r.buf)
	scale := 1 / float64(r.n)
	for i := range f {
		v := r.olap[i] + real(r.buf[i])*scale*r.win[i]
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
		r.olap[i] = real(r.buf[f+i]) * scale * r.win[f+i]
	}
}

// holdModel is what the learning hold holds each band against this frame:
// the smoothed microphone and reference powers and the reference's power
// now (blind: its envelope over the lags); nil for no hold, for a frame
// taken for near speech (but not after the echo path changed, nor, blind,
// by the unaligned model alone, not the young filter's output: the
// canceller holds such a frame down whole), or while the model is too
// young.
func (r *residual) holdModel(talk bool) (m, d, x []float64) {
	switch {
	case r.holdBy <= 0 || talk && !r.changed && (!r.blind || r.bTalking || r.young):
	case r.blind && r.bTrain >= resTrained:
		return r.bm, r.bd, r.env
	case !r.blind && r.trained >= resTrained:
		return r.gm, r.gd, r.sx
	}
	return nil, nil, nil
}

// passesHold reports whether band b of the microphone stands resBand above
// the echo expected there by the hold's model (and above its share of the
// noise floor); or, in a frame louder than its echo (the model aligned and
// the echo path unchanged), whether it stands resAbove above it, and the
// filter's output resBand above the residual expected there: the young
// filter takes the echo down, not a voice.
func (r *residual) passesHold(b int, m, d, x []float64) bool {
	if d[b] <= 0 {
		return false
	}
	w := float64(r.bands[b][1]-r.bands[b][0]) / float64(len(r.gBin))
	echo, noise := m[b]/d[b]*x[b], 4*w*r.floor
	if r.pm[b] > resBand*echo+noise {
		return true
	}
	return r.louder && !r.blind && !r.changed && r.pm[b] > resAbove*echo+noise && r.pe[b] > resBand*r.ge[b]/r.gd[b]*r.sx[b]+noise
}

// blindTalk tells near speech from echo while the echo's delay is not
// known (see blind), and learns the echo's level against the reference's
// envelope over the lags meanwhile (not from a frame the young filter took
// for near speech, young: the voice would lift the echo it is told from).
func (r *residual) blindTalk(far, sumM, sumE float64, young bool) bool {
	copy(r.ring[r.ringAt], r.sx)
	r.ringAt = (r.ringAt + 1) % r.span
	var expect float64
	for b := range r.env {
		m := 0.0
		for _, x := range r.ring {
			m = max(m, x[b])
		}
		r.env[b] = m
		if r.bd[b] > 0 {
			expect += r.bm[b] / r.bd[b] * m
		}
	}
	talk := held(&r.bHang, r.bTrain >= resTrained && r.nearSpeech(sumM, sumE, expect))
	if far > 0 {
		r.bFar++
	}
	if far > 0 && !talk && !young && r.bFar > r.span {
		// (Not before the echo of the first sound played can have come.)
		r.bTrain++
		for b := range r.env {
			r.bm[b] = resSmooth*r.bm[b] + r.pm[b]
			r.bd[b] = resSmooth*r.bd[b] + r.env[b]
		}
	}
	return talk
}

// nearSpeech: the microphone well above the echo expected, and the
// filter's output not far below the microphone (it takes echo off, not a
// talker it has never heard).
func (r *residual) nearSpeech(sumM, sumE, expect float64) bool {
	return sumM > resTalk*expect+4*r.floor && sumE > resKept*sumM
}

// nearBand is nearSpeech in band b: the microphone well above the echo
// expected there, and the filter's output not far below it.
func (r *residual) nearBand(b int) bool {
	return r.gd[b] > 0 && r.pm[b] > resTalk*r.gm[b]/r.gd[b]*r.sx[b] && r.pe[b] > resKept*r.pm[b]
}

// held keeps near speech for resHang frames after it was last seen
// (*hang counts them down).
func held(hang *int, seen bool) bool {
	switch {
	case seen:
		*hang = resHang
	case *hang > 0:
		*hang--
	default:
		return false
	}
	return true
}

// keep is what the aligned model learnt, kept for a while.
type keep struct{ gm, ge, gd []float64 }

// kept returns what the aligned model learnt.
func (r *residual) kept() keep {
	return keep{slices.Clone(r.gm), slices.Clone(r.ge), slices.Clone(r.gd)}
}

// restore takes back what the aligned model learnt when k was kept.
func (r *residual) restore(k keep) {
	if len(k.gm) == len(r.gm) {
		copy(r.gm, k.gm)
		copy(r.ge, k.ge)
		copy(r.gd, k.gd)
	}
}

// reset forgets what was learnt: the reference's timing changed.
func (r *residual) reset() { *r = *newResidual(r.frame, r.span) }

// learnt reports whether the far end played alone long enough for the
// suppressor to know the echo's level.
func (r *residual) learnt() bool { return r.trained >= resTrained }

// soften keeps what was learnt at weight k (0…1): the echo's level stays,
// and what comes next soon outweighs it.
func (r *residual) soften(k float64) {
	for b := range r.gm {
		r.gm[b] *= k
		r.ge[b] *= k
		r.gd[b] *= k
	}
	r.hang = 0
	r.restart()
}
