package wakewordtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/audio/audiotest"
)

// The wake set: material for measuring the wake word, made here with
// espeak-ng and sox, never fetched, and the same on every run. Every
// English espeak-ng voice and every variant, 120–200 words a minute,
// pitch 30–80, "hey jarvis" alone and with a command; confusable phrases;
// ordinary speech (paragraphs) and music synthesized with sox for false
// wakes. The variants are split in two: the tuning part and the held-out
// part share no variant. Renders are cached outside the clone in
// ${XDG_CACHE_HOME:-~/.cache}/agenthost/wakeset/<hash> (or
// $AGENTHOST_WAKESET_CACHE), the hash taken over this file and synth.go, espeak-ng's and
// sox's versions: a changed generator makes a new set.

// Voices are espeak-ng's English voices (`espeak-ng --voices=en`, without
// the mbrola ones, which need databases Debian does not install).
var Voices = []string{"en-gb", "en-us", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp", "en-gb-x-gbcwmd", "en-029", "en-us-nyc"}

// Variants are espeak-ng's voice variants (`espeak-ng --voices=variant`)
// and "" (none).
var Variants = []string{"", "adam", "Alex", "Alicia", "Andrea", "Andy", "Annie", "antonio", "aunty", "belinda", "benjamin", "boris", "caleb",
	"david", "Demonic", "Denis", "Diogo", "ed", "edward", "edward2", "Gene", "Gene2", "gustave", "announcer", "Henrique", "Hugo",
	"iven", "iven2", "iven3", "iven4", "Jacky", "john", "kaukovalta", "Lee", "linda", "marcelo", "Marco", "Mario", "max", "Michael",
	"michel", "miguel", "Mike", "Mr", "Nguyen", "pablo", "paul", "pedro", "quincy", "RicishayMax", "RicishayMax2", "RicishayMax3",
	"rob", "robert", "robosoft", "robosoft2", "robosoft3", "robosoft4", "robosoft5", "robosoft6", "robosoft7", "robosoft8", "steph",
	"steph2", "steph3", "Storm", "Tweaky", "UniRobot", "zac", "anika", "anikaRobot", "AnxiousAndy", "fast", "f1", "f2", "f3", "f4",
	"f5", "whisperf", "grandpa", "grandma", "klatt", "klatt2", "klatt3", "klatt4", "klatt5", "klatt6", "m1", "m2", "m3", "m4", "m5",
	"m6", "m7", "m8", "norbert", "sandro", "shelby", "travis", "victor", "whisper", "croak"}

// Commands follow the phrase in half the positive clips.
var Commands = []string{"what time is it", "turn the lights off", "play some music", "set a timer for ten minutes",
	"what is the weather tomorrow", "call my sister", "stop", "how far is the moon"}

// Confusables are phrases near "hey jarvis" that must not wake it.
var Confusables = []string{"hey Janice", "hey Jarrod", "Jarvis", "hey Travis", "harvest", "hey service", "hey Davis",
	"hey Marvin", "hey Harvey", "hey Garvey", "hey jars", "hey nervous", "hey Jasmine", "hey Carlos", "hey Charles",
	"hey Jarvik", "hey purpose", "hey artist", "hey Jack", "hey Mavis", "hey Elvis", "a jar of this", "Travis", "hey Java"}

// Sentences are ordinary speech for false wakes (paragraphs of them).
var Sentences = []string{
	"The weather tomorrow will be cloudy with a chance of rain in the afternoon.",
	"Please remind me to call my sister at seven.", "What time does the bakery on the corner open on Sundays?",
	"I have set a timer for twelve minutes.", "The capital of Australia is Canberra, not Sydney.",
	"Turn the volume down a little, the music is too loud.", "Here is the news: the council approved the new bridge.",
	"Jars of jam are on the top shelf, next to the honey.", "Harvey said he would drive us to the station.",
	"My car is parked behind the garage.", "A dictionary is a list of words and their meanings.",
	"Hey, can you pass me the salt?", "The crowd cheered as the team scored again.",
	"Let us meet at half past nine in the lobby.", "Please add milk, eggs and bread to the shopping list.",
	"The train to Edinburgh leaves from platform four.", "I think it is going to be a very long winter.",
	"Could you play some quiet jazz in the kitchen?", "The recipe needs two cups of flour and a pinch of salt.",
	"Jarring noises came from the workshop all morning.", "Ask me again in a minute.",
	"The museum is closed on Mondays and public holidays.", "Remind me to water the plants on Thursday.",
	"Hey there, how was your day?", "The craft fair starts at ten in the village hall.",
	"Electric cars are quieter than petrol cars.", "It is twenty degrees and sunny in Madrid.",
	"We harvested the apples before the first frost.", "The service was slow but the food was excellent.",
	"My neighbour Janice grows tomatoes in her greenhouse.", "He parked the van outside the pharmacy.",
	"The children built a sandcastle on the beach.", "Our flight was delayed by almost two hours.",
	"Can you find a recipe for vegetable soup?", "The library has a new collection of old maps.",
	"She practised the piano every evening after dinner.", "The garden needs a lot of work this spring.",
	"Traffic on the motorway is heavy this morning.", "I would like a large coffee with oat milk.",
	"The meeting has been moved to Wednesday afternoon.", "The dog barked at the postman again.",
}

// Clip is one rendered utterance.
type Clip struct {
	Voice, Variant string
	WPM, Pitch     int
	Text           string
	Held           bool    // in the held-out part (else the tuning part)
	PCM            []int16 // 16 kHz mono, trimmed of leading and trailing quiet
	End            int     // the end of the voiced audio in PCM
	// PhraseEnd is where "hey jarvis" ends in PCM (the end of the phrase
	// said alone in the same voice, when a command follows it).
	PhraseEnd int
	Onset     int // where the voice starts in PCM
}

// Name says what the clip is.
func (c Clip) Name() string {
	return fmt.Sprintf("%q %s %dwpm p%d", c.Text, c.VoiceName(), c.WPM, c.Pitch)
}

// VoiceName is the espeak-ng voice (with its variant).
func (c Clip) VoiceName() string {
	if c.Variant == "" {
		return c.Voice
	}
	return c.Voice + "+" + c.Variant
}

// Set is the wake set.
type Set struct {
	Dir         string
	Positives   []Clip             // "hey jarvis", alone and with a command
	Confusables []Clip             // must not wake
	Paragraphs  []Clip             // ordinary speech: false wakes, and babble
	Sounds      map[string][]int16 // sox-synthesized notes, chords and drums for music
}

// wakeset renders the wake set once per process.
var wakeset = sync.OnceValues(render)

// held: the variants of the held-out part (every other one, in a fixed
// shuffled order).
func held(variant string) bool {
	h := sha256.Sum256([]byte("wakeset-split:" + variant))
	return h[0]&1 == 1
}

// Wakeset renders (or reads from its cache) the wake set.
func Wakeset(t testing.TB) *Set {
	t.Helper()
	return must(t, wakeset)
}

// must is the set get gives, or t's end with get's error.
func must(t testing.TB, get func() (*Set, error)) *Set {
	t.Helper()
	s, err := get()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cacheDir is the folder of a set made by this file and the files named
// (in this folder), with the tools that print their versions so.
func cacheDir(files []string, tools ...[]string) (string, error) {
	_, self, _, _ := runtime.Caller(0)
	h := sha256.New()
	paths := []string{self}
	for _, f := range files {
		paths = append(paths, filepath.Join(filepath.Dir(self), f))
	}
	for _, f := range paths {
		src, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("wake set: the generator's source: %w", err)
		}
		h.Write([]byte(strings.Join(strings.Fields(string(src)), " "))) // gofmt does not make a new set
	}
	for _, c := range tools {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			return "", fmt.Errorf("wake set: %s: %w (scripts/install-deps.sh installs it)", c[0], err)
		}
		h.Write(out)
	}
	base := os.Getenv("AGENTHOST_WAKESET_CACHE")
	if base == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(c, "agenthost", "wakeset")
	}
	return filepath.Join(base, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

func render() (*Set, error) {
	dir, err := cacheDir([]string{"synth.go"}, []string{"espeak-ng", "--version"}, []string{"sox", "--version"})
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: dir}
	rng := rand.New(rand.NewPCG(24, 1))
	// Positives: every variant twice, with voices taken in turn, so every
	// voice meets many variants; half alone, half with a command.
	for i, v := range Variants {
		for k := 0; k < 2; k++ {
			text := "hey jarvis"
			if k == 1 {
				text += ", " + Commands[rng.IntN(len(Commands))]
			}
			s.Positives = append(s.Positives, Clip{Voice: Voices[(2*i+k)%len(Voices)], Variant: v,
				WPM: 120 + 10*rng.IntN(9), Pitch: 30 + 5*rng.IntN(11), Text: text, Held: held(v)})
		}
	}
	for i, p := range Confusables {
		for k := 0; k < 10; k++ {
			v := Variants[(7*i+13*k)%len(Variants)]
			s.Confusables = append(s.Confusables, Clip{Voice: Voices[(i+3*k)%len(Voices)], Variant: v,
				WPM: 120 + 10*rng.IntN(9), Pitch: 30 + 5*rng.IntN(11), Text: p, Held: held(v)})
		}
	}
	for i := 0; i < 240; i++ {
		perm := rng.Perm(len(Sentences))
		var text []string
		for _, j := range perm[:5] {
			text = append(text, Sentences[j])
		}
		v := Variants[(5*i)%len(Variants)]
		s.Paragraphs = append(s.Paragraphs, Clip{Voice: Voices[i%len(Voices)], Variant: v,
			WPM: 120 + 10*rng.IntN(9), Pitch: 30 + 5*rng.IntN(11), Text: strings.Join(text, " "), Held: held(v)})
	}
	return s, s.renderClips()
}

// renderClips renders the set's clips, two at a time, and its sounds.
func (s *Set) renderClips() error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	jobs := make(chan *Clip)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				if err := say(s.Dir, c); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, list := range [][]Clip{s.Positives, s.Confusables, s.Paragraphs} {
		for i := range list {
			jobs <- &list[i]
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	var err error
	s.Sounds, err = sounds(s.Dir)
	return err
}

// say renders c (cached by its parameters).
func say(dir string, c *Clip) error {
	key := sha256.Sum256([]byte(fmt.Sprintf("%s|%d|%d|%s", c.VoiceName(), c.WPM, c.Pitch, c.Text)))
	raw := filepath.Join(dir, "say-"+hex.EncodeToString(key[:8])+".s16")
	if _, err := os.Stat(raw); err != nil {
		wav := raw + ".wav"
		effects, err := synthesize(c, wav)
		if err != nil {
			return err
		}
		tmp := raw + ".tmp"
		args := append([]string{"-D", wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", tmp}, effects...)
		if out, err := exec.Command("sox", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("sox %s: %w: %s", c.Name(), err, out)
		}
		os.Remove(wav)
		if err := os.Rename(tmp, raw); err != nil {
			return err
		}
	}
	pcm, err := audiotest.ReadRaw(raw)
	if err != nil {
		return err
	}
	from, to := voiced(pcm)
	if to <= from {
		return fmt.Errorf("wake set: %s is silent", c.Name())
	}
	start := max(0, from-800)
	c.PCM = pcm[start:min(len(pcm), to+800)]
	c.End = to - start
	c.Onset = from - start
	c.PhraseEnd = c.End
	if strings.HasPrefix(c.Text, "hey jarvis, ") {
		alone := *c
		alone.Text = "hey jarvis"
		if err := say(dir, &alone); err != nil {
			return err
		}
		// Both start alike: the phrase ends as long after the onset.
		c.PhraseEnd = min(c.End, from-start+alone.End-alone.Onset)
	}
	return nil
}

// voiced is the span from the first to the end of the last 10 ms louder
// than -45 dBFS.
func voiced(p []int16) (int, int) {
	from, to := -1, 0
	for i := 0; i+160 <= len(p); i += 160 {
		if dbfs(p[i:i+160]) >= -45 {
			if from < 0 {
				from = i
			}
			to = i + 160
		}
	}
	return max(from, 0), to
}

func dbfs(p []int16) float64 {
	var e float64
	for _, v := range p {
		e += float64(v) * float64(v)
	}
	return 10*math.Log10(e/float64(len(p))+1e-9) - 20*math.Log10(32768)
}

// sounds are sox-synthesized notes, chords and drums (cached; -R: the
// same bits on every render).
func sounds(dir string) (map[string][]int16, error) {
	type spec struct {
		name string
		args []string
	}
	var specs []spec
	notes := []string{"C3", "E3", "G3", "A3", "C4", "D4", "E4", "F4", "G4", "A4", "B4", "C5", "E5", "G5"}
	chords := [][]string{{"C4", "E4", "G4"}, {"A3", "C4", "E4"}, {"F3", "A3", "C4"}, {"G3", "B3", "D4"}, {"D4", "F4", "A4"}, {"E3", "G3", "B3"}}
	for i, n := range notes {
		specs = append(specs, spec{"pluck-" + n, []string{"synth", "0.45", "pluck", n, "fade", "0", "0.45", "0.2"}})
		specs = append(specs, spec{"organ-" + n, []string{"synth", "0.6", "sine", n, "sine", n, "tremolo", "6", "30", "overdrive", "5", "fade", "0.02", "0.6", "0.15"}})
		if i%2 == 0 {
			specs = append(specs, spec{"lead-" + n, []string{"synth", "0.3", "square", n, "lowpass", "2500", "fade", "0.01", "0.3", "0.1", "vol", "0.3"}})
		}
	}
	for i, c := range chords {
		args := []string{"synth", "1.2"}
		for _, n := range c {
			args = append(args, "pluck", n)
		}
		specs = append(specs, spec{fmt.Sprintf("chord-%d", i), append(args, "reverb", "40", "fade", "0", "1.2", "0.5", "vol", "0.6")})
		args = []string{"synth", "1.6"}
		for _, n := range c {
			args = append(args, "sawtooth", n)
		}
		specs = append(specs, spec{fmt.Sprintf("pad-%d", i), append(args, "lowpass", "1200", "chorus", "0.7", "0.9", "55", "0.4", "0.25", "2", "-t", "fade", "0.3", "1.6", "0.6", "vol", "0.35")})
	}
	specs = append(specs,
		spec{"kick", []string{"synth", "0.2", "sine", "90:40", "fade", "0", "0.2", "0.15"}},
		spec{"snare", []string{"synth", "0.15", "whitenoise", "bandpass", "1800", "1.5q", "fade", "0", "0.15", "0.12", "vol", "0.5"}},
		spec{"hat", []string{"synth", "0.05", "whitenoise", "highpass", "7000", "fade", "0", "0.05", "0.04", "vol", "0.3"}},
		spec{"bass-C2", []string{"synth", "0.4", "triangle", "C2", "fade", "0.01", "0.4", "0.2"}},
		spec{"bass-G2", []string{"synth", "0.4", "triangle", "G2", "fade", "0.01", "0.4", "0.2"}},
		spec{"bass-A2", []string{"synth", "0.4", "triangle", "A2", "fade", "0.01", "0.4", "0.2"}},
	)
	out := map[string][]int16{}
	for _, s := range specs {
		raw := filepath.Join(dir, "sound-"+s.name+".s16")
		if _, err := os.Stat(raw); err != nil {
			args := append([]string{"-R", "-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw + ".tmp"}, s.args...)
			if o, err := exec.Command("sox", args...).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("sox %v: %w: %s", s.args, err, o)
			}
			if err := os.Rename(raw+".tmp", raw); err != nil {
				return nil, err
			}
		}
		p, err := audiotest.ReadRaw(raw)
		if err != nil {
			return nil, err
		}
		out[s.name] = p
	}
	return out, nil
}

// Music is n samples of music sequenced from the set's sounds: a beat,
// a bass line, chords and a melody, at a tempo rng picks.
func (s *Set) Music(rng *rand.Rand, n int) []int16 {
	byName := func(prefix string) [][]int16 {
		var names []string
		for name := range s.Sounds {
			if strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		g := make([][]int16, len(names))
		for i, name := range names {
			g[i] = s.Sounds[name]
		}
		return g
	}
	kick, snare, hat := byName("kick")[0], byName("snare")[0], byName("hat")[0]
	bass, chords, pads := byName("bass"), byName("chord"), byName("pad")
	melody := append(append(byName("pluck"), byName("organ")...), byName("lead")...)
	acc := make([]float64, n)
	put := func(p []int16, at int, g float64) {
		for i, v := range p {
			if at+i < n {
				acc[at+i] += g * float64(v)
			}
		}
	}
	beat := int(16000 * 60 / float64(80+rng.IntN(80)))
	drums := rng.IntN(4) != 0
	for at, b := 0, 0; at < n; at, b = at+beat, b+1 {
		if drums {
			if b%2 == 0 {
				put(kick, at, 0.8)
			} else {
				put(snare, at, 0.7)
			}
			put(hat, at+beat/2, 0.6)
		}
		if b%4 == 0 {
			if rng.IntN(2) == 0 {
				put(chords[rng.IntN(len(chords))], at, 0.5)
			} else {
				put(pads[rng.IntN(len(pads))], at, 0.6)
			}
			put(bass[rng.IntN(len(bass))], at, 0.7)
		}
		for k := 0; k < 2; k++ {
			if rng.IntN(3) != 0 {
				put(melody[rng.IntN(len(melody))], at+k*beat/2, 0.5)
			}
		}
	}
	peak := 1.0
	for _, v := range acc {
		peak = max(peak, math.Abs(v))
	}
	out := make([]int16, n)
	for i, v := range acc {
		out[i] = int16(v / peak * 26000)
	}
	return out
}

// Pink is pink noise (Paul Kellet's filter) at unit RMS.
func Pink(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	var b0, b1, b2, b3, b4, b5, b6 float64
	for i := range out {
		w := rng.NormFloat64()
		b0 = 0.99886*b0 + w*0.0555179
		b1 = 0.99332*b1 + w*0.0750759
		b2 = 0.96900*b2 + w*0.1538520
		b3 = 0.86650*b3 + w*0.3104856
		b4 = 0.55000*b4 + w*0.5329522
		b5 = -0.7616*b5 - w*0.0168980
		out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w*0.5362
		b6 = w * 0.115926
	}
	return unit(out)
}

// Brown is brown (red) noise at unit RMS: leaky integrated white noise.
func Brown(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	var y float64
	for i := range out {
		y = 0.998*y + rng.NormFloat64()
		out[i] = y
	}
	// Take off the lowest drift (below ~20 Hz): a microphone does not pass it.
	var lo float64
	for i, v := range out {
		lo = 0.992*lo + 0.008*v
		out[i] = v - lo
	}
	return unit(out)
}

func unit(p []float64) []float64 {
	var e float64
	for _, v := range p {
		e += v * v
	}
	r := math.Sqrt(e / float64(len(p)))
	for i := range p {
		p[i] /= r
	}
	return p
}

// Sox runs pcm (16 kHz mono) through sox effects, cached in the set's
// folder by the audio's hash and the effects.
func (s *Set) Sox(pcm []int16, effects ...string) ([]int16, error) {
	h := sha256.New()
	h.Write(audiotest.SamplesToBytes(pcm))
	h.Write([]byte(strings.Join(effects, " ")))
	raw := filepath.Join(s.Dir, "sox-"+hex.EncodeToString(h.Sum(nil))[:16]+".s16")
	if _, err := os.Stat(raw); err != nil {
		out, err := Sox(pcm, effects...)
		if err != nil {
			return nil, err
		}
		if err := audiotest.WriteRaw(raw+".tmp", out); err != nil {
			return nil, err
		}
		if err := os.Rename(raw+".tmp", raw); err != nil {
			return nil, err
		}
	}
	return audiotest.ReadRaw(raw)
}

// Sox runs pcm (16 kHz mono) through sox effects, without dither: the same
// output every run.
func Sox(pcm []int16, effects ...string) ([]int16, error) {
	f := []string{"-t", "raw", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer"}
	args := append(append(append(append([]string{"-D"}, f...), "-"), f...), "-")
	cmd := exec.Command("sox", append(args, effects...)...)
	cmd.Stdin = bytes.NewReader(audiotest.SamplesToBytes(pcm))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sox %v: %w: %s", effects, err, errb.String())
	}
	return audiotest.BytesToSamples(out.Bytes()), nil
}
