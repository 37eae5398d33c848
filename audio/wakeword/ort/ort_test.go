package ort_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/capture"
	"github.com/agenthost/agenthost/audio/echoroom"
	"github.com/agenthost/agenthost/audio/vad"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/internal/longtest"
)

const rate = wakeword.Rate

// fetched fetches the models and loads the library: the npm ONNX Runtime,
// or the one AGENTHOST_TEST_ONNXRUNTIME names.
func fetched(t testing.TB) wakewordtest.Files {
	t.Helper()
	f := wakewordtest.Fetch(t)
	lib := f.ONNXRuntime
	if l := os.Getenv("AGENTHOST_TEST_ONNXRUNTIME"); l != "" {
		lib = l
	}
	v, err := ort.Init(lib)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ONNX Runtime %s from %s", v, lib)
	return f
}

// openModels opens the fetched models f names: the melspectrogram, the embedding
// and the wake models.
func openModels(t testing.TB, f wakewordtest.Files, names ...string) *ort.Runtime {
	t.Helper()
	p := ort.Paths{Mel: f.Model("melspectrogram"), Embedding: f.Model("embedding_model")}
	for _, n := range names {
		p.Wake = append(p.Wake, f.Model(n))
	}
	rt, err := ort.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// runtime loads the library and the four fetched wake models.
func runtime(t testing.TB) (*ort.Runtime, []string) {
	t.Helper()
	names := []string{"hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy"}
	rt := openModels(t, fetched(t), names...)
	t.Cleanup(rt.Close)
	return rt, names
}

// detector is runtime's models as a detector with the shipped settings but
// threshold.
func detector(t testing.TB, threshold float64) (*wakeword.Detector, []string) {
	t.Helper()
	rt, names := runtime(t)
	o := wakeword.Shipped
	o.Threshold = threshold
	d, err := wakeword.NewDetectorWith(rt, names, o)
	if err != nil {
		t.Fatal(err)
	}
	return d, names
}

func samples(d time.Duration) int { return int(d.Seconds() * rate) }

// noise is white noise at dbfs (RMS).
func noise(rng *rand.Rand, n int, dbfs float64) []int16 {
	a := math.Pow(10, dbfs/20) * 32768
	out := make([]int16, n)
	for i := range out {
		out[i] = clamp(a * rng.NormFloat64())
	}
	return out
}

func clamp(v float64) int16 {
	return int16(max(-32768, min(32767, math.Round(v))))
}

// mix adds b (scaled by gain) into a from offset.
func mix(a, b []int16, at int, gain float64) {
	for i, v := range b {
		if at+i < len(a) {
			a[at+i] = clamp(float64(a[at+i]) + gain*float64(v))
		}
	}
}

// TestDetectsSpokenWakeWords: espeak-ng says each model's phrase in
// several voices, speeds and pitches, inside one stream (unrelated speech
// before, room noise under it); at least 95% are detected, by the right
// model, within a second of the phrase's end. "alexa" and "hey my croft"
// in espeak's en-us voice are weak for their models (0.5…0.85 where en-gb
// scores 0.97…1): they are measured and printed, but not counted. By
// default a third of the clips (two speeds, one pitch) with at most one
// missed; AGENTHOST_LONG_TESTS=1 says all 54 (longtest).
func TestDetectsSpokenWakeWords(t *testing.T) {
	det, names := detector(t, 0.5)
	phrases := map[string]string{"hey_jarvis": "hey jarvis", "alexa": "alexa", "hey_mycroft": "hey my croft"}
	filler := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-us", WPM: 160}, "I put the kettle on and read the paper.")
	rng := rand.New(rand.NewPCG(1, 2))
	type clip struct {
		model, what string
		end         int  // position of the phrase's last voiced sample
		weak        bool // not counted
	}
	var clips []clip
	stream := make([]int16, 0, samples(10*time.Minute))
	stream = append(stream, make([]int16, samples(3*time.Second))...)
	for _, model := range []string{"hey_jarvis", "alexa", "hey_mycroft"} {
		for _, voice := range []string{"en-us", "en-gb", "en-gb-x-rp"} {
			for _, wpm := range longtest.Pick([]int{120, 135, 150}, 2) {
				for _, pitch := range longtest.Pick([]int{40, 60}, 1) {
					words := audiotest.Say(t, audiotest.SpeechOptions{Voice: voice, WPM: wpm, Pitch: pitch}, phrases[model])
					stream = append(stream, filler...)
					stream = append(stream, make([]int16, samples(700*time.Millisecond))...)
					at := len(stream)
					stream = append(stream, words...)
					weak := voice == "en-us" && model != "hey_jarvis"
					clips = append(clips, clip{model, fmt.Sprintf("%s %s %dwpm p%d", model, voice, wpm, pitch), at + voicedEnd(words), weak})
					stream = append(stream, make([]int16, samples(2500*time.Millisecond))...)
				}
			}
		}
	}
	mix(stream, noise(rng, len(stream), -55), 0, 1)
	found, err := feedAll(det, stream)
	if err != nil {
		t.Fatal(err)
	}
	hit, wrong, counted, weakHit, weak := 0, 0, 0, 0, 0
	var lags []float64
	for _, c := range clips {
		ok := false
		for _, d := range found {
			lag := int(d.End) - c.end
			if lag > -samples(time.Second) && lag < samples(1500*time.Millisecond) {
				if d.Model == c.model {
					ok = true
					lags = append(lags, float64(lag)/rate*1000)
				} else {
					wrong++
					t.Logf("%s: %s fired (%.3f)", c.what, d.Model, d.Score)
				}
			}
		}
		if !ok {
			t.Logf("missed: %s", c.what)
		}
		switch {
		case c.weak:
			weak++
			if ok {
				weakHit++
			}
		default:
			counted++
			if ok {
				hit++
			}
		}
	}
	t.Logf("detected %d of %d positive clips (%.1f%%) with %v; en-us alexa and hey my croft (not counted): %d of %d; %d detections in all; lag after the phrase's end: %s",
		hit, counted, 100*float64(hit)/float64(counted), names, weakHit, weak, len(found), spread(lags))
	if !longtest.Enabled() && hit < counted-1 {
		t.Errorf("detected %d of %d clips of the short set, want all but one at most", hit, counted)
	}
	if longtest.Enabled() && hit*100 < 95*counted {
		t.Errorf("detected %d of %d clips, want ≥ 95%%", hit, counted)
	}
	if wrong > 0 || len(found) > len(clips) {
		t.Errorf("%d detections by another model, %d detections for %d clips", wrong, len(found), len(clips))
	}
}

// voicedEnd is the end of the last 10 ms louder than -45 dBFS.
func voicedEnd(words []int16) int {
	n := len(words) / 160 * 160
	for n > 0 && vad.DBFS(words[n-160:n]) < -45 {
		n -= 160
	}
	return n
}

func feedAll(det *wakeword.Detector, stream []int16) ([]wakeword.Detection, error) {
	var found []wakeword.Detection
	pos := det.Pos()
	for i := 0; i < len(stream); i += 960 {
		chunk := stream[i:min(i+960, len(stream))]
		d, err := det.Feed(pos, chunk)
		if err != nil {
			return found, err
		}
		pos += int64(len(chunk))
		found = append(found, d...)
	}
	return found, nil
}

func spread(ms []float64) string {
	if len(ms) == 0 {
		return "none"
	}
	lo, hi, sum := ms[0], ms[0], 0.0
	for _, v := range ms {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	return fmt.Sprintf("%.0f…%.0f ms (mean %.0f)", lo, hi, sum/float64(len(ms)))
}

// TestNoFalseWakes: at least 30 minutes of audio that holds no wake phrase
// (sentences in several voices, noise, music-like tones, and the speaker's
// own replies coming back through the echo room, with and without the
// canceller) wake nothing at the default threshold. The detector runs
// unpaced, faster than real time. By default one round of each kind, its
// noise and tones a third as long (over 3 minutes); AGENTHOST_LONG_TESTS=1
// runs the 30 minutes (longtest).
func TestNoFalseWakes(t *testing.T) {
	want := longtest.Scale(3*time.Minute, 30*time.Minute)
	rounds := longtest.Scale(time.Second, 31*time.Minute) // one round, or over 31 minutes of them
	minute := longtest.Scale(20*time.Second, time.Minute)
	det, _ := detector(t, 0.5)
	rng := rand.New(rand.NewPCG(3, 4))
	var sentences [][]int16
	voices := []string{"en-us", "en-gb", "en-gb-x-rp", "en-us+f3", "en-gb+m3", "en"}
	for i, s := range negativeSentences {
		sentences = append(sentences, audiotest.Say(t, audiotest.SpeechOptions{Voice: voices[i%len(voices)], WPM: 130 + 10*(i%4)}, s))
	}
	var replies []int16
	for _, s := range negativeSentences[:12] {
		replies = append(replies, audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 160}, s)...)
		replies = append(replies, make([]int16, samples(300*time.Millisecond))...)
	}
	segments := map[string]time.Duration{}
	var total time.Duration
	var all []wakeword.Detection
	feed := func(kind string, pcm []int16) {
		found, err := feedAll(det, pcm)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range found {
			t.Errorf("false wake in %s: %s scored %.3f", kind, d.Model, d.Score)
		}
		all = append(all, found...)
		d := time.Duration(len(pcm)) * time.Second / rate
		segments[kind] += d
		total += d
	}
	start := time.Now()
	for round := 0; total < rounds; round++ {
		// Sentences, at a level and over noise that change each round.
		block := make([]int16, 0, samples(2*time.Minute))
		for _, i := range rng.Perm(len(sentences)) {
			block = append(block, sentences[i]...)
			block = append(block, make([]int16, samples(time.Duration(200+rng.IntN(800))*time.Millisecond))...)
		}
		scale(block, math.Pow(10, (-float64(rng.IntN(12)))/20))
		mix(block, noise(rng, len(block), -60+float64(rng.IntN(20))), 0, 1)
		feed("sentences", block)
		// Noise: white and fan-like (low-passed), -40…-20 dBFS.
		feed("noise", noise(rng, samples(minute), -40+float64(rng.IntN(20))))
		feed("noise", lowpass(noise(rng, samples(minute), -30+float64(rng.IntN(10))), 0.97))
		// Music-like tones: chords and arpeggios with envelopes.
		feed("music-like tones", music(rng, samples(2*minute)))
		// The speaker's replies through the room, cancelled and not.
		room := echoroom.Room{Delay: time.Duration(20+rng.IntN(200)) * time.Millisecond, Gain: -float64(6 + rng.IntN(14)), Noise: -60, Seed: uint64(round)}
		sig := room.Render(replies, nil)
		feed("replies through the echo room", sig.Mic)
		feed("replies through the echo room and the canceller", cancelEcho(t, sig.Mic, replies))
	}
	cpu := cpuTime()
	t.Logf("%s of negatives (%v) in %s wall, %s CPU: %d false wakes", total.Round(time.Second), segments, time.Since(start).Round(time.Second), cpu.Round(time.Second), len(all))
	if total < want {
		t.Fatalf("only %s of negatives, want %s", total, want)
	}
}

func scale(p []int16, g float64) {
	for i, v := range p {
		p[i] = clamp(float64(v) * g)
	}
}

func lowpass(p []int16, a float64) []int16 {
	var y float64
	for i, v := range p {
		y = a*y + (1-a)*float64(v)*6
		p[i] = clamp(y)
	}
	return p
}

// music is notes of a few harmonics, in chords and runs, with attack and decay.
func music(rng *rand.Rand, n int) []int16 {
	out := make([]int16, n)
	for at := 0; at < n; {
		dur := samples(time.Duration(150+rng.IntN(600)) * time.Millisecond)
		notes := 1 + rng.IntN(3)
		for k := 0; k < notes; k++ {
			f := 220 * math.Pow(2, float64(rng.IntN(30))/12)
			amp := 0.05 + 0.1*rng.Float64()
			for i := 0; i < dur && at+i < n; i++ {
				env := math.Min(1, float64(i)/160) * math.Exp(-3*float64(i)/float64(dur))
				x := 2 * math.Pi * f * float64(i) / rate
				v := math.Sin(x) + 0.5*math.Sin(2*x) + 0.25*math.Sin(3*x)
				out[at+i] = clamp(float64(out[at+i]) + 32767*amp*env*v/1.75)
			}
		}
		at += dur
	}
	return out
}

// cancelEcho runs the microphone through the echo canceller with far as
// its reference, frame by frame.
func cancelEcho(t testing.TB, mic, far []int16) []int16 {
	e, err := capture.NewEcho(nil, capture.EchoOptions{Rate: rate, MaxDelay: capture.DefaultMaxDelay})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := append([]int16(nil), mic...)
	for i := 0; i+160 <= len(out); i += 160 {
		e.Cancel(out[i:i+160], far[i:i+160])
	}
	return out
}

// negativeSentences hold no wake phrase; some come near one ("Alex
// said", "Jarvis Cocker", "hey there"). Left out: "A lexicon is…", which
// espeak says as "alexa-con" and which wakes alexa (0.78…1.0 in four of six
// voices): a homophone, not a false wake.
var negativeSentences = []string{
	"The weather tomorrow will be cloudy with a chance of rain in the afternoon.",
	"Please remind me to call my sister at seven.",
	"What time does the bakery on the corner open on Sundays?",
	"I have set a timer for twelve minutes.",
	"The capital of Australia is Canberra, not Sydney.",
	"Turn the volume down a little, the music is too loud.",
	"Here is the news: the council approved the new bridge.",
	"Jars of jam are on the top shelf, next to the honey.",
	"Harvey said he would drive us to the station.",
	"My car is parked behind the garage.",
	"A dictionary is a list of words and their meanings.",
	"Hey, can you pass me the salt?",
	"Microsoft and Apple reported their earnings today.",
	"The crowd cheered as the team scored again.",
	"Let us meet at half past nine in the lobby.",
	"Please add milk, eggs and bread to the shopping list.",
	"The train to Edinburgh leaves from platform four.",
	"I think it is going to be a very long winter.",
	"Could you play some quiet jazz in the kitchen?",
	"The recipe needs two cups of flour and a pinch of salt.",
	"Jarring noises came from the workshop all morning.",
	"Alex said the exam was easier than last year.",
	"My friend Jarvis Cocker sang in a band.",
	"Ask me again in a minute.",
	"The museum is closed on Mondays and public holidays.",
	"Remind me to water the plants on Thursday.",
	"Hey there, how was your day?",
	"The craft fair starts at ten in the village hall.",
	"Electric cars are quieter than petrol cars.",
	"It is twenty degrees and sunny in Madrid.",
}

func cpuTime() time.Duration {
	var ru [2]int64
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	var f []string
	s := string(b)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			s = s[i+2:]
			break
		}
	}
	f = splitFields(s)
	if len(f) > 13 {
		fmt.Sscan(f[11], &ru[0])
		fmt.Sscan(f[12], &ru[1])
	}
	return time.Duration(ru[0]+ru[1]) * 10 * time.Millisecond
}

func splitFields(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r == ' ' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(r)
	}
	return append(out, cur)
}

// TestAFinerStepKeepsTheReferenceScores: a stream that scores every 20 or
// 40 ms gives, at the 80 ms positions, the reference procedure's scores
// (the mel frames stay on their grid, and the model reads embeddings 80 ms
// apart), and between them scores of the same kind.
func TestAFinerStepKeepsTheReferenceScores(t *testing.T) {
	detector(t, 0.5) // loads the library
	f := wakewordtest.Fetch(t)
	rt, err := ort.Open(ort.Paths{Mel: f.Model("melspectrogram"), Embedding: f.Model("embedding_model"), Wake: []string{f.Model("hey_jarvis")}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	stream := append(append(make([]int16, samples(2500*time.Millisecond)), words...), make([]int16, samples(time.Second))...)
	mix(stream, noise(rand.New(rand.NewPCG(5, 6)), len(stream), -60), 0, 1)
	scores := func(step int) map[int64]float32 {
		s, err := wakeword.NewStreamStep(rt, step)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Feed(stream, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]float32{}
		for _, sc := range out {
			m[sc.End] = sc.Value
		}
		return m
	}
	ref := scores(wakeword.Hop)
	best := float32(0)
	for _, v := range ref {
		best = max(best, v)
	}
	if best < 0.5 {
		t.Fatalf("the reference procedure scores the phrase %.3f at best", best)
	}
	for _, step := range []int{640, 320} {
		fine := scores(step)
		if len(fine) < len(ref)*wakeword.Hop/step-wakeword.Hop/step {
			t.Errorf("step %d: %d scores for the reference's %d", step, len(fine), len(ref))
		}
		for end, v := range ref {
			if w, ok := fine[end]; !ok || math.Abs(float64(w-v)) > 1e-4 {
				t.Errorf("step %d at %d: %.5f (present %v), the reference %.5f", step, end, w, ok, v)
			}
		}
	}
}

// TestAClipStartedLaterScoresAlike: with the shipped step, where the
// scoring grid falls in the speech hardly matters: a phrase started 0, 20,
// 40 or 60 ms later scores within 0.15 at best (issue 24; scoring every
// 80 ms, one clip of the wake set scored 0.16 or 0.99 by its start).
func TestAClipStartedLaterScoresAlike(t *testing.T) {
	detector(t, 0.5) // loads the library
	f := wakewordtest.Fetch(t)
	rt, err := ort.Open(ort.Paths{Mel: f.Model("melspectrogram"), Embedding: f.Model("embedding_model"), Wake: []string{f.Model("hey_jarvis")}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// Voices of the wake set whose score moved most with the 80 ms step.
	for _, c := range []struct {
		o    audiotest.SpeechOptions
		text string
	}{
		{audiotest.SpeechOptions{Voice: "en-us-nyc+john", WPM: 150, Pitch: 45}, "hey jarvis, play some music"},
		{audiotest.SpeechOptions{Voice: "en-029+pedro", WPM: 140, Pitch: 80}, "hey jarvis"},
		{audiotest.SpeechOptions{Voice: "en-029+m1", WPM: 140, Pitch: 60}, "hey jarvis"},
		{audiotest.SpeechOptions{Voice: "en-gb-x-gbcwmd+m4", WPM: 150, Pitch: 40}, "hey jarvis, what is the weather tomorrow"},
		{audiotest.SpeechOptions{Voice: "en-us+Andrea", WPM: 160, Pitch: 80}, "hey jarvis, turn the lights off"},
	} {
		o := c.o
		words := audiotest.Say(t, o, c.text)
		scale(words, 0.3) // -10 dB: the wake set's speech level
		lo, hi := float32(2), float32(-1)
		var got []string
		for _, late := range []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond} {
			// The room's noise moves with the phrase: only the grid's phase
			// changes. (A new noise of -60 dBFS alone moves such a clip's
			// score as much: the model is that sensitive near its threshold.)
			base := append(append(make([]int16, samples(2500*time.Millisecond)), words...), make([]int16, samples(time.Second))...)
			mix(base, noise(rand.New(rand.NewPCG(7, 8)), len(base), -60), 0, 1)
			stream := append(noise(rand.New(rand.NewPCG(9, 10)), samples(late), -60), base...)
			s, err := wakeword.NewStreamStep(rt, wakeword.Shipped.Step)
			if err != nil {
				t.Fatal(err)
			}
			scores, err := s.Feed(stream, nil)
			if err != nil {
				t.Fatal(err)
			}
			best := float32(0)
			for _, sc := range scores {
				best = max(best, sc.Value)
			}
			lo, hi = min(lo, best), max(hi, best)
			got = append(got, fmt.Sprintf("%v: %.2f", late, best))
		}
		t.Logf("%+v: %s", o, strings.Join(got, ", "))
		if hi-lo > 0.15 {
			t.Errorf("%+v: the best score moves %.2f with where the phrase starts (%s)", o, hi-lo, strings.Join(got, ", "))
		}
	}
}
