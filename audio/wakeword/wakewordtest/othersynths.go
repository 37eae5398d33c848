package wakewordtest

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// OtherVoices are the English voices of Debian's synthesizers besides
// espeak-ng's formant rules, each made from recordings of a person: flite's
// and festival's (kal, awb, rms, slt, ked, rab, don; diphones, units and an
// HTS model), MBROLA's diphones spoken through espeak-ng (four native
// speakers, and sixteen speakers of other languages reading English with
// their own phones, as people with an accent do), RHVoice's (alan, bdl,
// clb, evgeniy, lyubov) and SVOX Pico's two. The voice names a person:
// AGENTHOST_WAKESET_HEAD_SYNTHS picks people by a part of it.
var OtherVoices = []string{"flite/kal", "flite/kal16", "flite/awb", "flite/rms", "flite/slt",
	"festival/kal_diphone", "festival/ked_diphone", "festival/cmu_us_slt_arctic_hts",
	"festival/rab_diphone", "festival/don_diphone",
	"mbrola/us1", "mbrola/us2", "mbrola/us3", "mbrola/en1",
	"mbrola/af1-en", "mbrola/nl2-en", "mbrola/fr1-en", "mbrola/fr4-en", "mbrola/de1-en", "mbrola/de2-en", "mbrola/de3-en", "mbrola/de4-en",
	"mbrola/de5-en", "mbrola/de6-en", "mbrola/gr2-en", "mbrola/hu1-en", "mbrola/pl1-en", "mbrola/ro1-en", "mbrola/sw1-en", "mbrola/sw2-en",
	"rhvoice/alan", "rhvoice/bdl", "rhvoice/clb", "rhvoice/evgeniy-eng", "rhvoice/lyubov",
	"pico/en-US", "pico/en-GB"}

// otherVoicePackages are the Debian packages OtherVoices come from
// (contrib and non-free: test material, never shipped).
var otherVoicePackages = []string{"flite", "festival", "festvox-kallpc16k", "festvox-kdlpc16k", "festvox-us-slt-hts",
	"festvox-rablpc16k", "festvox-don", "mbrola", "mbrola-us1", "mbrola-us2", "mbrola-us3", "mbrola-en1",
	"mbrola-af1", "mbrola-nl2", "mbrola-fr1", "mbrola-fr4", "mbrola-de1", "mbrola-de2", "mbrola-de3", "mbrola-de4",
	"mbrola-de5", "mbrola-de6", "mbrola-gr2", "mbrola-hu1", "mbrola-pl1", "mbrola-ro1", "mbrola-sw1", "mbrola-sw2",
	"rhvoice", "rhvoice-english", "libttspico-utils"}

// otherSynths renders the other synthesizers' set once per process.
var otherSynths = sync.OnceValues(renderOthers)

// OtherSynths renders (or reads from its cache) the wake set's kinds of
// clips in OtherVoices, each at 120–200 words a minute and pitch 30–80 as
// the wake set's clips: per voice six of the phrase (half with a command)
// and four paragraphs of ordinary speech, the confusables eight times each
// (the same sounds for music). All of it is in the held-out part: material
// nobody tuned on, from other synthesizers.
func OtherSynths(t testing.TB) *Set {
	t.Helper()
	return must(t, otherSynths)
}

func renderOthers() (*Set, error) {
	dir, err := cacheDir([]string{"othersynths.go", "synth.go"}, []string{"sox", "--version"},
		append([]string{"dpkg-query", "-W"}, otherVoicePackages...))
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: dir}
	rng := rand.New(rand.NewPCG(28, 1))
	clip := func(voice, text string) Clip {
		return Clip{Voice: voice, WPM: 120 + 10*rng.IntN(9), Pitch: 30 + 5*rng.IntN(11), Text: text, Held: true}
	}
	n := len(OtherVoices)
	for i := 0; i < 6*n; i++ {
		text := "hey jarvis"
		if i%2 == 1 {
			text += ", " + Commands[rng.IntN(len(Commands))]
		}
		s.Positives = append(s.Positives, clip(OtherVoices[(i/2)%n], text))
	}
	for i, p := range Confusables {
		for k := 0; k < 8; k++ {
			s.Confusables = append(s.Confusables, clip(OtherVoices[(i+5*k)%n], p))
		}
	}
	for i := 0; i < 4*n; i++ {
		var text []string
		for _, j := range rng.Perm(len(Sentences))[:5] {
			text = append(text, Sentences[j])
		}
		s.Paragraphs = append(s.Paragraphs, clip(OtherVoices[i%n], strings.Join(text, " ")))
	}
	return s, s.renderClips()
}
