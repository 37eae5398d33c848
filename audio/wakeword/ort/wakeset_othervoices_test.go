package ort_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
)

// otherLanguages are espeak-ng's non-English voices that read the extra
// negatives' English sentences with their own sounds: voices neither part
// of the wake set has (both parts are English voices).
var otherLanguages = []string{"de", "fr-fr", "es", "it", "nl", "pl", "pt", "ru", "sv", "cs", "fi", "hu", "tr", "hi",
	"vi", "el", "da", "ro", "sk", "hr", "id", "sw", "cy", "af", "bg", "ca", "et", "is", "lv", "sq"}

// otherNegatives are hours of negatives in voices the tuning part lacks
// and the held-out part lacks too (issue 24: the head learnt "not these
// voices" instead of "not this phrase"): half the clips in a non-English
// voice (otherLanguages) with a tuning variant or none, half in a tuning
// voice shifted with sox (pitch ±2–7 semitones, speed 0.85–1.2, a third
// of them with a pitch bend). Otherwise as moreNegatives: the same
// sentences, noise and music; seeded, in streams of 10 minutes. One hour
// of them (per-example weighting, hard ones from 0.05), held-out: 31
// false wakes an hour at 0.5 (without: 41), 5 at 0.9 three in a row (5),
// confusables 19.8% (21.6%): the head still learns the voices it heard.
func otherNegatives(b *testing.B, set *wakewordtest.Set, hours float64) []*condition {
	tuning := tuningVoices(set)
	var variants []string
	for _, va := range wakewordtest.Variants {
		if tuningVariant(set, va) {
			variants = append(variants, va)
		}
	}
	rng := rand.New(rand.NewPCG(24, 9))
	voice := func(i int) (string, []string) {
		if i%2 == 0 {
			v := otherLanguages[(i/2)%len(otherLanguages)]
			if va := variants[rng.IntN(len(variants))]; va != "" {
				v += "+" + va
			}
			return v, nil
		}
		semi := (2 + 5*rng.Float64()) * float64(1-2*rng.IntN(2))
		fx := []string{"pitch", fmt.Sprintf("%.0f", 100*semi), "speed", fmt.Sprintf("%.3f", 0.85+0.35*rng.Float64())}
		if rng.IntN(3) == 0 {
			up, down := 600*rng.Float64()-300, 600*rng.Float64()-300
			fx = append(fx, "bend", fmt.Sprintf("0.4,%.0f,0.6", up), fmt.Sprintf("1.2,%.0f,0.6", down))
		}
		return tuning[(i*7)%len(tuning)], append(fx, "rate", "16000")
	}
	return negativeStreams(b, set, hours, rand.New(rand.NewPCG(24, 8)), "other-voice negatives", voice, false)
}

// tuningVoices are the tuning part's voices with their variants.
func tuningVoices(set *wakewordtest.Set) []string {
	seen := map[string]bool{}
	var voices []string
	for _, c := range append(append([]wakewordtest.Clip(nil), set.Positives...), set.Paragraphs...) {
		if !c.Held && !seen[c.VoiceName()] {
			seen[c.VoiceName()] = true
			voices = append(voices, c.VoiceName())
		}
	}
	for _, v := range wakewordtest.Voices {
		for _, va := range wakewordtest.Variants {
			name := v
			if va != "" {
				name += "+" + va
			}
			if !seen[name] && tuningVariant(set, va) {
				seen[name] = true
				voices = append(voices, name)
			}
		}
	}
	return voices
}

// sayShifted is set.Say of text, then fx through sox if there are any.
func sayShifted(set *wakewordtest.Set, voice string, wpm, pitch int, text string, fx []string) ([]int16, error) {
	pcm, err := set.Say(voice, wpm, pitch, text)
	if err != nil || len(fx) == 0 {
		return pcm, err
	}
	return wakewordtest.Sox(pcm, fx...)
}

// negativeStreams renders hours of sentences (four to eight a clip, clip
// i in voice(i), its sox effects applied when it names any) at 110–210
// words a minute and pitch 20–90, a third over music or pink or brown
// noise at 0–20 dB, and a fifth of the time music or noise alone; in
// streams of 10 minutes named label. With speechOnly, the sentences
// alone (the same draws).
func negativeStreams(b *testing.B, set *wakewordtest.Set, hours float64, rng *rand.Rand, label string, voice func(i int) (string, []string), speechOnly bool) []*condition {
	speechWant := int(hours*3600*wakeword.Rate) * 4 / 5
	type job struct {
		voice      string
		fx         []string
		wpm, pitch int
		text       string
		pcm        []int16
		err        error
		level, snr float64
		bg         int // 0 none, 1 music, 2 pink, 3 brown
	}
	// Clips of about 20 s (4–8 sentences of ~2.5 s): enough of them.
	n := speechWant / (20 * wakeword.Rate)
	jobs := make([]*job, n)
	for i := range jobs {
		var text []string
		for k := 4 + rng.IntN(5); k > 0; k-- {
			text = append(text, negSentence(rng))
		}
		v, fx := voice(i)
		jobs[i] = &job{voice: v, fx: fx, wpm: 110 + 10*rng.IntN(11), pitch: 20 + 5*rng.IntN(15),
			text: strings.Join(text, " "), level: speechLevel - 8 + 16*rng.Float64(), snr: 20 * rng.Float64()}
		if rng.IntN(3) == 0 {
			jobs[i].bg = 1 + rng.IntN(3)
		}
	}
	t0 := time.Now()
	onTwo(jobs, nil, func(_ func() *ort.Runtime, j *job) {
		j.pcm, j.err = sayShifted(set, j.voice, j.wpm, j.pitch, j.text, j.fx)
	})
	b.Logf("%s: %d clips rendered in %s", label, len(jobs), time.Since(t0).Round(time.Second))
	noise := func(kind, n int) []float64 {
		switch kind {
		case 1:
			return unitMusic(set, rng, n)
		case 2:
			return wakewordtest.Pink(rng, n)
		}
		return wakewordtest.Brown(rng, n)
	}
	var acc []float64
	var out []*condition
	// flush makes a stream of 10 minutes (all that is left at the end).
	flush := func(end bool) {
		for len(acc) >= 10*60*wakeword.Rate || (end && len(acc) > 0) {
			n := min(len(acc), 10*60*wakeword.Rate)
			floor := wakewordtest.Pink(rng, n)
			for k := range n {
				acc[k] += floor[k] * math.Pow(10, -65.0/20) * 32768
			}
			c := &condition{name: fmt.Sprintf("%s %d", label, len(out)+1), kind: "negative", pcm: toPCM(acc[:n])}
			c.duration = time.Duration(n) * time.Second / wakeword.Rate
			out = append(out, c)
			acc = append(acc[:0], acc[n:]...)
		}
	}
	for i, j := range jobs {
		if j.err != nil {
			b.Fatal(j.err)
		}
		g := math.Pow(10, (j.level-activeDB(j.pcm))/20)
		seg := make([]float64, len(j.pcm)+wakeword.Rate/4+rng.IntN(wakeword.Rate))
		for k, v := range j.pcm {
			seg[k] = g * float64(v)
		}
		j.pcm = nil
		if j.bg > 0 && !speechOnly {
			nz := noise(j.bg, len(seg))
			a := math.Pow(10, (j.level-j.snr)/20) * 32768
			for k := range seg {
				seg[k] += a * nz[k]
			}
		}
		acc = append(acc, seg...)
		if i%5 == 4 && !speechOnly {
			// Music or noise alone, 10–40 s.
			m := noise(1+rng.IntN(3), (10+rng.IntN(31))*wakeword.Rate)
			a := math.Pow(10, (speechLevel-10+16*rng.Float64())/20) * 32768
			for _, v := range m {
				acc = append(acc, a*v)
			}
		}
		flush(false)
	}
	flush(true)
	return out
}

// otherPhrase is "hey jarvis" spelt for each of otherLanguages so that
// the voice says a "j" as in "jar" (or as its speakers would: French
// "zh", Swedish "dj"), not as in "yes": the phrase in voices the wake
// set has not, for otherPositives.
var otherPhrase = map[string]string{"de": "hey dscharwis", "fr-fr": "hey jarvis", "es": "hey yarvis", "it": "hey jarvis",
	"nl": "hee djarvis", "pl": "hej dżarwis", "pt": "hey jarvis", "ru": "hey jarvis", "sv": "hej djarvis", "cs": "hej džarvis",
	"fi": "hei tsarvis", "hu": "hej dzsárvisz", "tr": "hey jarvis", "hi": "hey jarvis", "vi": "hey jarvis", "el": "hey jarvis",
	"da": "hey jarvis", "ro": "hey jarvis", "sk": "hej džarvis", "hr": "hej džarvis", "id": "hey jarvis", "sw": "hei jarvis",
	"cy": "hey jarvis", "af": "hei djarvis", "bg": "hey jarvis", "ca": "hey jarvis", "et": "hei džarvis", "is": "hei djarvis",
	"lv": "hei džarvis", "sq": "hej xharvis"}

// otherPositives are n clips of the phrase in voices the tuning part
// lacks (issue 24: with other-voice negatives alone the head learns "not
// these voices"): otherSaid's voices and rooms. Seeded. 200 of them
// beside an hour of other-voice negatives, held-out at 0.9 three in a
// row: recall 91–99% (far 99%), 4 false wakes an hour, but confusables
// 15.5% (without them 8.6%).
func otherPositives(b *testing.B, set *wakewordtest.Set, n int) []*condition {
	return otherSaid(b, set, n, rand.New(rand.NewPCG(24, 10)), "other voices", "positive", otherPick(set), func(lang string, _ int) string {
		if lang == "" {
			return "hey jarvis"
		}
		return otherPhrase[lang]
	})
}

// otherConfusables are n clips of near misses (the head's own and the
// tuning part's confusables, in turn) in voices the tuning part lacks, as
// otherPositives says the phrase. Seeded. 200 of them beside 200 of the
// phrase, held-out: worse (43% of confusables wake it at 0.5, 94 false
// wakes an hour; without them 32% and 54).
func otherConfusables(b *testing.B, set *wakewordtest.Set, n int) []*condition {
	texts := nearMissTexts(set)
	return otherSaid(b, set, n, rand.New(rand.NewPCG(24, 11)), "other voices' near misses", "confusable", otherPick(set), func(_ string, i int) string {
		return texts[(i*5)%len(texts)]
	})
}

// nearMissTexts are the head's own near misses and the tuning part's
// confusables.
func nearMissTexts(set *wakewordtest.Set) []string {
	texts := append([]string(nil), headConfusables...)
	seen := map[string]bool{}
	for _, c := range set.Confusables {
		if !c.Held && !seen[c.Text] {
			seen[c.Text] = true
			texts = append(texts, c.Text)
		}
	}
	return texts
}

// otherPick picks otherSaid's voice for clip i: for even i a non-English
// voice (otherLanguages, with a tuning variant or none), for odd i a
// tuning voice shifted with sox (pitch, speed and sometimes a bend) as
// otherNegatives shifts them.
func otherPick(set *wakewordtest.Set) func(i int, rng *rand.Rand) (voice, lang string, fx []string) {
	tuning := tuningVoices(set)
	var variants []string
	for _, va := range wakewordtest.Variants {
		if tuningVariant(set, va) {
			variants = append(variants, va)
		}
	}
	return func(i int, rng *rand.Rand) (string, string, []string) {
		if i%2 == 0 {
			l := otherLanguages[(i/2)%len(otherLanguages)]
			voice := l
			if va := variants[rng.IntN(len(variants))]; va != "" {
				voice += "+" + va
			}
			return voice, l, nil
		}
		semi := (2 + 5*rng.Float64()) * float64(1-2*rng.IntN(2))
		fx := []string{"pitch", fmt.Sprintf("%.0f", 100*semi), "speed", fmt.Sprintf("%.3f", 0.85+0.35*rng.Float64())}
		if rng.IntN(3) == 0 {
			// sox refuses a bend of 0 cents.
			up, down := (20+130*rng.Float64())*float64(1-2*rng.IntN(2)), (20+130*rng.Float64())*float64(1-2*rng.IntN(2))
			fx = append(fx, "bend", fmt.Sprintf("0.1,%.0f,0.2", up), fmt.Sprintf("0.35,%.0f,0.2", down))
		}
		return tuning[(i*7)%len(tuning)], "", append(fx, "rate", "16000")
	}
}

// otherSaid renders n clips of text(lang, i), clip i in the voice pick
// gives it (lang its non-English language, or ""; fx sox effects after
// it), at 110–210 words a minute and pitch 20–90; each laid out as the
// tuning part's positives are, clean, under pink noise at 10 and 5 dB,
// under music at 0 dB and far (low-passed, reverberant, 20 dB quieter)
// under pink noise at 10 dB; conditions of kind named label.
func otherSaid(b *testing.B, set *wakewordtest.Set, n int, rng *rand.Rand, label, kind string,
	pick func(i int, rng *rand.Rand) (voice, lang string, fx []string), text func(lang string, i int) string) []*condition {
	type job struct {
		voice, text string
		fx          []string
		wpm, pitch  int
		pcm, far    []int16
		err         error
	}
	jobs := make([]*job, n)
	for i := range jobs {
		j := &job{wpm: 110 + 10*rng.IntN(11), pitch: 20 + 5*rng.IntN(15)}
		var lang string
		j.voice, lang, j.fx = pick(i, rng)
		j.text = text(lang, i)
		jobs[i] = j
	}
	onTwo(jobs, nil, func(_ func() *ort.Runtime, j *job) {
		j.pcm, j.err = sayShifted(set, j.voice, j.wpm, j.pitch, j.text, j.fx)
		if j.err == nil {
			j.far, j.err = set.Sox(append(append([]int16(nil), j.pcm...), make([]int16, 8000)...), "lowpass", "3000", "reverb", "90", "60", "100")
		}
	})
	layout := func(name string, far bool, noise func(n int) []float64, snr float64) *condition {
		c := &condition{name: label + ": " + name, kind: kind}
		var acc []float64
		for _, j := range jobs {
			from, end := voicedSpan(j.pcm)
			p, level := j.pcm, speechLevel-6+12*rng.Float64()
			if far {
				p, level = j.far, level-20
			}
			at := len(acc) + lead
			g := math.Pow(10, (level-activeDB(p[:end]))/20)
			seg := make([]float64, lead+len(p)+tail)
			for k, v := range p {
				seg[lead+k] = g * float64(v)
			}
			if noise != nil {
				nz := noise(len(seg))
				a := math.Pow(10, (level-snr)/20) * 32768
				for k := range seg {
					seg[k] += a * nz[k]
				}
			}
			acc = append(acc, seg...)
			c.clips = append(c.clips, placed{name: j.voice + " " + j.text, voice: j.voice, start: at + from, phraseAt: at + end})
		}
		c.setAudio(rng, acc)
		return c
	}
	pink := func(n int) []float64 { return wakewordtest.Pink(rng, n) }
	music := func(n int) []float64 {
		return unitMusic(set, rng, n)
	}
	for _, j := range jobs {
		if j.err != nil {
			b.Fatal(j.err)
		}
	}
	return []*condition{layout("clean", false, nil, 0), layout("pink 10 dB", false, pink, 10),
		layout("pink 5 dB", false, pink, 5), layout("music 0 dB", false, music, 0),
		layout("far, pink 10 dB", true, pink, 10)}
}

// voicedSpan is the span from the first to the end of the last 10 ms
// louder than -45 dBFS (as the wake set marks its clips).
func voicedSpan(p []int16) (int, int) {
	from, to := -1, 0
	for i := 0; i+160 <= len(p); i += 160 {
		var e float64
		for _, v := range p[i : i+160] {
			e += float64(v) * float64(v)
		}
		if 10*math.Log10(e/160/32768/32768+1e-20) >= -45 {
			if from < 0 {
				from = i
			}
			to = i + 160
		}
	}
	return max(from, 0), to
}
