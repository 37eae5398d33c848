package wakeword

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Refractory is how long after a detection no other is reported: one
// phrase scores above the threshold for several steps.
const Refractory = 2 * time.Second

// Detection is a wake phrase heard.
type Detection struct {
	Model string
	Score float32
	End   int64 // the stream position after the audio the model had heard
	// Verified is the owner's verifier's probability (0 without one).
	Verified float32
}

// Detector turns a stream's scores into detections.
type Detector struct {
	s         *Stream
	names     []string
	trig      Trigger
	quietTill int64 // no detection before this position
	scores    []Score
	runs      []int // each model's scores in a row at or over the threshold
	gain      *Gain // nil: none
	buf       []int16
	verify    *verifying // nil: no verifier
	thresh    []float32  // by model: a verifier's threshold, else its point's, else the trigger's
	over      []int      // by model: its point's scores in a row, else the trigger's
	// While the speaker sounds (SetHeard): by model, the point then,
	// never laxer than thresh and over, and the samples within which a
	// voice must have been heard before a detection (0: none asked).
	heard    Heard
	sthresh  []float32
	sover    []int
	svoice   []int64
	voiceEnd int64 // the position after the last chunk not taken for own sound
}

// Point is one model's operating point: it fires when Over scores in a
// row reach Threshold. A zero field is the detector's own (Options).
type Point struct {
	Threshold float64
	Over      int
	// Voice, in a point while sounding: a detection also needs audio the
	// echo canceller did not take for the speaker's own sound alone
	// (Heard.OwnSound) within Voice before it. Zero: none asked.
	Voice time.Duration
}

// String is p as logs show it: "0.9×2", "0.98×2, a voice within 500ms".
func (p Point) String() string {
	s := fmt.Sprintf("%g×%d", p.Threshold, max(p.Over, 1))
	if p.Voice > 0 {
		s += fmt.Sprintf(", a voice within %s", p.Voice)
	}
	return s
}

// Options are a detector's settings.
type Options struct {
	// Threshold is the score (0..1) at or over which a model fires.
	Threshold float64
	// Step is the samples between scores (see NewStreamStep); 0 is Hop.
	Step int
	// Over is how many scores in a row must reach the threshold (1 when 0).
	Over int
	// Gain puts the gain control (Gain) before the models.
	Gain bool
	// Points are the models' own operating points by model (a missing or
	// zero one: Threshold and Over).
	Points []Point
	// WhileSounding are the models' points while the speaker itself
	// sounds (SetSounding), by model: a model that wakes on the speaker's
	// own sound, cancelled, is held to a stricter point then. A zero field,
	// or one laxer than the model's point, is the model's point.
	WhileSounding []Point
	// Verifiers are the owners' verifiers by model (nil: none for that
	// model). A model with one fires on a score at or over the verifier's
	// Candidate whose window the verifier takes (Threshold); Threshold and
	// Over then apply to the verifier's probability.
	Verifiers []*Verifier
}

// Shipped are the detector's default settings, measured on the wake set
// (BenchmarkWakeSet in audio/wakeword/ort): see its table in the README.
var Shipped = Options{Threshold: 0.5, Step: 320, Over: 1}

// NewDetector detects the models of rt (named names) above threshold,
// scoring every Hop samples.
func NewDetector(rt Runtime, names []string, threshold float64) *Detector {
	d, _ := NewDetectorWith(rt, names, Options{Threshold: threshold})
	return d
}

// NewDetectorWith detects the models of rt (named names) as o says.
func NewDetectorWith(rt Runtime, names []string, o Options) (*Detector, error) {
	if o.Step == 0 {
		o.Step = Hop
	}
	if o.Over < 1 {
		o.Over = 1
	}
	d := &Detector{names: names, trig: Trigger{Threshold: float32(o.Threshold), Over: o.Over}, runs: make([]int, rt.Models())}
	d.thresh, d.over = make([]float32, rt.Models()), make([]int, rt.Models())
	for i := range d.thresh {
		d.thresh[i], d.over[i] = d.trig.Threshold, d.trig.Over
		if i < len(o.Points) && o.Points[i].Threshold > 0 {
			d.thresh[i] = float32(o.Points[i].Threshold)
		}
		if i < len(o.Points) && o.Points[i].Over > 0 {
			d.over[i] = o.Points[i].Over
		}
	}
	for i, v := range o.Verifiers {
		if v == nil {
			continue
		}
		if i >= rt.Models() {
			return nil, fmt.Errorf("a verifier for model %d of %d", i+1, rt.Models())
		}
		if err := v.Check(); err != nil {
			return nil, fmt.Errorf("the verifier of %s: %w", names[i], err)
		}
		if v.Window != rt.Window(i) {
			return nil, fmt.Errorf("the verifier of %s reads %d embeddings; the model reads %d (enroll again)", names[i], v.Window, rt.Window(i))
		}
		if d.verify == nil {
			d.verify = &verifying{Runtime: rt, v: make([]*Verifier, rt.Models())}
		}
		d.verify.v[i] = v
		d.thresh[i] = float32(v.Threshold)
	}
	d.sthresh, d.sover, d.svoice = slices.Clone(d.thresh), slices.Clone(d.over), make([]int64, len(d.thresh))
	d.voiceEnd = math.MinInt64 / 2
	for i := range d.sthresh {
		if i < len(o.WhileSounding) && (d.verify == nil || d.verify.v[i] == nil) { // a verifier decides alone
			d.sthresh[i] = max(d.sthresh[i], float32(o.WhileSounding[i].Threshold))
			d.sover[i] = max(d.sover[i], o.WhileSounding[i].Over)
			d.svoice[i] = int64(o.WhileSounding[i].Voice.Seconds() * Rate)
		}
	}
	if d.verify != nil {
		rt = d.verify
	}
	s, err := NewStreamStep(rt, o.Step)
	if err != nil {
		return nil, err
	}
	d.s = s
	if o.Gain {
		d.gain = NewGain()
	}
	return d, nil
}

// Trigger decides from one model's scores in order whether it fires: Over
// scores in a row at or over Threshold.
type Trigger struct {
	Threshold float32
	Over      int
}

// Fires takes the next score, with run the scores in a row at or over the
// threshold before it, and returns the new run and whether it fires.
func (t Trigger) Fires(v float32, run int) (int, bool) {
	if v < t.Threshold {
		return 0, false
	}
	run++
	return run, run >= max(t.Over, 1)
}

// SetHeard says how the audio fed next was heard: while the speaker
// sounds, the models' points while sounding apply to it.
func (d *Detector) SetHeard(h Heard) { d.heard = h }

// Pos is the position after the last sample fed.
func (d *Detector) Pos() int64 { return d.s.Pos() }

// Feed takes pcm at stream position pos; a position that does not follow
// on from the last is a gap, after which the stream starts again.
func (d *Detector) Feed(pos int64, pcm []int16) ([]Detection, error) {
	if pos != d.s.Pos() {
		d.s.Reset(pos)
		clear(d.runs)
		if d.gain != nil {
			d.gain = NewGain()
		}
	}
	if d.gain != nil {
		d.buf = append(d.buf[:0], pcm...)
		d.gain.Apply(d.buf)
		pcm = d.buf
	}
	if d.verify != nil {
		d.verify.verdicts = d.verify.verdicts[:0]
	}
	if !d.heard.OwnSound {
		d.voiceEnd = pos + int64(len(pcm))
	}
	var err error
	d.scores, err = d.s.Feed(pcm, d.scores[:0])
	var out []Detection
	for k, sc := range d.scores {
		v, verified := sc.Value, float32(0)
		if d.verify != nil && d.verify.v[sc.Model] != nil {
			// The verifier decides: its probability, 0 when the score
			// did not make the step a candidate.
			verified = max(0, d.verify.verdicts[k])
			v = verified
		}
		trig := Trigger{Threshold: d.thresh[sc.Model], Over: d.over[sc.Model]}
		if d.heard.Sounding {
			trig = Trigger{Threshold: d.sthresh[sc.Model], Over: d.sover[sc.Model]}
		}
		var fire bool
		d.runs[sc.Model], fire = trig.Fires(v, d.runs[sc.Model])
		if !fire || sc.End < d.quietTill {
			continue
		}
		if w := d.svoice[sc.Model]; d.heard.Sounding && w > 0 && sc.End-d.voiceEnd > w {
			continue // the speaker's own sound alone: no voice in the room near it
		}
		out = append(out, Detection{Model: d.names[sc.Model], Score: sc.Value, End: sc.End, Verified: verified})
		d.quietTill = sc.End + int64(Refractory.Seconds()*Rate)
	}
	return out, err
}

// Default names and places.
const (
	// DefaultDir is where scripts/fetch-wakeword.sh puts the files when run
	// as root: models/ and, where the system has no ONNX Runtime, onnxruntime/.
	DefaultDir = "/var/lib/agenthost/wakeword"
	// MelModel and EmbeddingModel are the feature models in models/.
	MelModel       = "melspectrogram"
	EmbeddingModel = "embedding_model"
)

// Known are the wake models scripts/fetch-wakeword.sh fetches.
var Known = []string{"hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy"}

// IsPath reports whether a models entry is a file path rather than a name.
func IsPath(m string) bool {
	return strings.ContainsRune(m, '/') || strings.HasSuffix(m, ".onnx")
}

// ModelName is what logs and hooks call a model: its name, or its file's
// name without .onnx and a _v0.1 version.
func ModelName(m string) string {
	if !IsPath(m) {
		return m
	}
	b := strings.TrimSuffix(filepath.Base(m), ".onnx")
	if i := strings.LastIndex(b, "_v"); i > 0 {
		b = b[:i]
	}
	return b
}

// ModelFile finds a model (a name, or a path to an .onnx file) in dir/models.
func ModelFile(dir, m string) (string, error) {
	if IsPath(m) {
		if _, err := os.Stat(m); err != nil {
			return "", fmt.Errorf("wake model %s: %w", m, err)
		}
		return m, nil
	}
	models := filepath.Join(dir, "models")
	for _, p := range []string{filepath.Join(models, m+".onnx"), filepath.Join(models, m+"_v0.1.onnx")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(models, m+"_v*.onnx")); len(matches) > 0 {
		sort.Strings(matches)
		return matches[len(matches)-1], nil
	}
	known := ""
	for _, k := range Known {
		if k == m {
			known = "; fetch the models with scripts/fetch-wakeword.sh (installed as /usr/lib/agenthost/fetch-wakeword)"
		}
	}
	if known == "" {
		known = fmt.Sprintf("; it is not one of the models fetched (%s): give the path of your own .onnx model", strings.Join(Known, ", "))
	}
	return "", fmt.Errorf("wake model %q is not in %s%s", m, models, known)
}

// triplets are Debian's library folders by GOARCH.
var triplets = map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "arm": "arm-linux-gnueabihf"}

// FindONNXRuntime finds the ONNX Runtime library: the system's (Debian
// trixie's libonnxruntime1.21, /usr/lib/<triplet>/libonnxruntime.so.1.*),
// then the one scripts/fetch-wakeword.sh put in dir/onnxruntime.
func FindONNXRuntime(dir string) (string, error) {
	var tried []string
	if t, ok := triplets[runtime.GOARCH]; ok {
		pattern := filepath.Join("/usr/lib", t, "libonnxruntime.so.1.*")
		tried = append(tried, pattern)
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			sort.Strings(m)
			return m[0], nil // the soname link (…so.1.21) sorts before its target
		}
	}
	p := filepath.Join(dir, "onnxruntime", "libonnxruntime.so.1")
	tried = append(tried, p)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	hint := "on Debian 13 trixie: apt install libonnxruntime1.21; on Debian 12 bookworm (amd64, arm64): scripts/fetch-wakeword.sh fetches it"
	if runtime.GOARCH == "arm" {
		hint = "32-bit ARM has it only in Debian 13 trixie: apt install libonnxruntime1.21"
	}
	return "", fmt.Errorf("no ONNX Runtime library found (looked for %s): %s, or set conversation.wake_word.onnxruntime", strings.Join(tried, " and "), hint)
}
