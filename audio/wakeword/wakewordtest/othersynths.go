package wakewordtest

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// OtherVoices are the English voices of flite and festival, the
// synthesizers besides espeak-ng that Debian has: diphones, units and an
// HTS model made from recordings of five people (kal, awb, rms, slt, ked),
// where espeak-ng's voices are formant rules. No head is trained on them.
var OtherVoices = []string{"flite/kal", "flite/kal16", "flite/awb", "flite/rms", "flite/slt",
	"festival/kal_diphone", "festival/ked_diphone", "festival/cmu_us_slt_arctic_hts"}

// otherSynths renders the other synthesizers' set once per process.
var otherSynths = sync.OnceValues(renderOthers)

// OtherSynths renders (or reads from its cache) the wake set's kinds of
// clips (the phrase alone and with a command, the confusables, paragraphs
// of ordinary speech; the same sounds for music) in OtherVoices, each at
// 120–200 words a minute and pitch 30–80 as the wake set's clips, all in
// the held-out part: material nobody tuned on, from other synthesizers.
func OtherSynths(t testing.TB) *Set {
	t.Helper()
	return must(t, otherSynths)
}

func renderOthers() (*Set, error) {
	dir, err := cacheDir([]string{"othersynths.go", "synth.go"}, []string{"sox", "--version"},
		[]string{"dpkg-query", "-W", "flite", "festival", "festvox-kallpc16k", "festvox-kdlpc16k", "festvox-us-slt-hts"})
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: dir}
	rng := rand.New(rand.NewPCG(28, 1))
	clip := func(voice, text string) Clip {
		return Clip{Voice: voice, WPM: 120 + 10*rng.IntN(9), Pitch: 30 + 5*rng.IntN(11), Text: text, Held: true}
	}
	for i := 0; i < 12*len(OtherVoices); i++ {
		text := "hey jarvis"
		if i%2 == 1 {
			text += ", " + Commands[rng.IntN(len(Commands))]
		}
		s.Positives = append(s.Positives, clip(OtherVoices[(i/2)%len(OtherVoices)], text))
	}
	for i, p := range Confusables {
		for k := 0; k < 5; k++ {
			s.Confusables = append(s.Confusables, clip(OtherVoices[(i+3*k)%len(OtherVoices)], p))
		}
	}
	for i := 0; i < 12*len(OtherVoices); i++ {
		var text []string
		for _, j := range rng.Perm(len(Sentences))[:5] {
			text = append(text, Sentences[j])
		}
		s.Paragraphs = append(s.Paragraphs, clip(OtherVoices[i%len(OtherVoices)], strings.Join(text, " ")))
	}
	return s, s.renderClips()
}
