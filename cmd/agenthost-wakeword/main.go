// Command agenthost-wakeword is the wake-word detector: a child of the host
// (host/wakeword starts and supervises it) that loads ONNX Runtime and
// openWakeWord's models, reads 16 kHz audio on stdin and writes detections
// on stdout, in the protocol of package audio/wakeword. It holds the large
// native library so that the host does not: a crash or hang here ends only
// the detector.
//
//	agenthost-wakeword [--dir DIR] [--onnxruntime LIB] [--threshold T] [--step D] [--over N] [--point MODEL=T,N]... [--gain] [--verifiers VDIR] [--check] MODEL...
//	agenthost-wakeword [--dir DIR] [--onnxruntime LIB] --enroll VDIR --phrase RAW... --other RAW... MODEL
//
// --step is how often the models score (80, 40, 20 or 10 ms: a shorter
// step makes where the 80 ms grid falls in the speech matter less, for
// more CPU); --over is how many scores in a row must reach the threshold;
// --point gives one model its own threshold and scores in a row (agenthost's
// own models have theirs, see heads.PointUnder);
// --gain puts an automatic gain control before the models. The defaults
// are wakeword.Shipped.
//
// --verifiers names the folder of the owners' verifiers (VDIR/MODEL.verifier.json,
// see wakeword.Verifier): a model with one fires only when its verifier takes
// the window; a file that cannot serve is named in the ready line's
// verifier_error and the model runs without it. --enroll trains MODEL's
// verifier from recordings (raw 16 kHz mono s16le: the phrase, and other
// speech), writes it into VDIR atomically and prints one "enrolled" line
// (or "error"); `agenthost wakeword enroll` runs it.
//
// MODEL is a name (hey_jarvis, alexa, hey_mycroft, hey_rhasspy: DIR/models;
// hey_jarvis_agenthost: agenthost's own, built in, see package heads) or the
// path of an openWakeWord .onnx model. --check loads everything, runs
// the models once, prints the ready (or error) line and exits.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/heads"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
)

func main() {
	out, err := protocolOut()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenthost-wakeword:", err)
		os.Exit(1)
	}
	if afterRedirect != nil {
		afterRedirect()
	}
	os.Exit(run(os.Args[1:], os.Stdin, out))
}

// afterRedirect is set by a testkit build (testkit.go).
var afterRedirect func()

// protocolOut keeps the protocol stream (file descriptor 1) for this
// program alone and points descriptor 1 at stderr, where anything a
// library prints goes.
func protocolOut() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("dup stdout: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup3(2, 1, 0); err != nil {
		return nil, fmt.Errorf("stdout to stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "protocol"), nil
}

func run(args []string, in io.Reader, out io.Writer) int {
	fs := flag.NewFlagSet("agenthost-wakeword", flag.ContinueOnError)
	dir := fs.String("dir", wakeword.DefaultDir, "where scripts/fetch-wakeword.sh put models/ (and onnxruntime/)")
	lib := fs.String("onnxruntime", "", "the ONNX Runtime library (default: the system's, then DIR/onnxruntime)")
	sh := wakeword.Shipped
	threshold := fs.Float64("threshold", sh.Threshold, "the score (0..1) at or above which a model fires")
	step := fs.Duration("step", time.Duration(sh.Step)*time.Second/wakeword.Rate, "how often the models score: 80ms, 40ms, 20ms or 10ms")
	over := fs.Int("over", sh.Over, "how many scores in a row must reach the threshold (1…10)")
	gain := fs.Bool("gain", sh.Gain, "put the automatic gain control before the models")
	check := fs.Bool("check", false, "load everything, print the ready or error line, exit")
	verifiers := fs.String("verifiers", "", "the folder of the owners' verifiers (MODEL.verifier.json); \"\": none")
	enrollDir := fs.String("enroll", "", "train MODEL's verifier from --phrase and --other recordings into this folder, and exit")
	var phrases, others, points repeated
	fs.Var(&points, "point", "MODEL=THRESHOLD,OVER: that model's own threshold and scores in a row (repeatable)")
	fs.Var(&phrases, "phrase", "with --enroll: a recording of the phrase, raw 16 kHz mono s16le (repeatable)")
	fs.Var(&others, "other", "with --enroll: a recording of other speech or the room, raw 16 kHz mono s16le (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	w := bufio.NewWriter(out)
	fail := func(err error) int {
		w.Write(wakeword.Message{Type: wakeword.KindError, Error: err.Error()}.Encode())
		w.Flush()
		fmt.Fprintln(os.Stderr, "agenthost-wakeword:", err)
		return 1
	}
	if *enrollDir != "" {
		m, err := enroll(*dir, *lib, *enrollDir, phrases, others, fs.Args())
		if err != nil {
			return fail(err)
		}
		w.Write(m.Encode())
		w.Flush()
		return 0
	}
	o := wakeword.Options{Threshold: *threshold, Step: int(step.Seconds()*wakeword.Rate + 0.5), Over: *over, Gain: *gain}
	var err error
	if o.Points, err = parsePoints(points, fs.Args(), wakeword.Point{Threshold: o.Threshold, Over: o.Over}); err != nil {
		return fail(err)
	}
	for _, m := range fs.Args() {
		p, _ := heads.PointWhileSounding(m) // zero: the model's point
		o.WhileSounding = append(o.WhileSounding, p)
	}
	who, err := asOwner(*dir, *lib, fs.Args(), *verifiers)
	if err != nil {
		return fail(err)
	}
	det, ready, closeRT, err := load(*dir, *lib, o, fs.Args(), *verifiers)
	if err != nil {
		return fail(asWho(err, who))
	}
	defer closeRT()
	if *check {
		// Run the models once: a model that loads but does not run fails here.
		if _, err := det.Feed(0, make([]int16, 3*wakeword.Rate)); err != nil {
			return fail(asWho(err, who))
		}
	}
	w.Write(ready.Encode())
	if err := w.Flush(); err != nil || *check {
		return 0
	}
	if err := serve(det, in, w); err != nil {
		fmt.Fprintln(os.Stderr, "agenthost-wakeword:", err)
		return 1
	}
	return 0
}

func load(dir, lib string, o wakeword.Options, models []string, verifiers string) (*wakeword.Detector, wakeword.Message, func(), error) {
	var ready wakeword.Message
	if len(models) == 0 {
		return nil, ready, nil, errors.New("no wake model given")
	}
	if o.Threshold <= 0 || o.Threshold >= 1 {
		return nil, ready, nil, fmt.Errorf("threshold %g is outside (0, 1)", o.Threshold)
	}
	if err := wakeword.ValidStep(o.Step); err != nil {
		return nil, ready, nil, fmt.Errorf("--step: %w", err)
	}
	if o.Over < 1 || o.Over > 10 {
		return nil, ready, nil, fmt.Errorf("--over %d is outside 1…10", o.Over)
	}
	rt, names, version, lib, err := open(dir, lib, models)
	if err != nil {
		return nil, ready, nil, err
	}
	ready = wakeword.Message{Type: wakeword.KindReady, ONNXRuntime: version, Library: lib, Models: names}
	if verifiers != "" {
		var problems []string
		for i, name := range names {
			v, err := wakeword.LoadVerifier(wakeword.VerifierFile(verifiers, name))
			if err == nil && v != nil && (v.Model != name || v.Window != rt.Window(i)) {
				err = fmt.Errorf("the verifier %s is for model %s reading %d embeddings, not %s reading %d: enroll again", wakeword.VerifierFile(verifiers, name), v.Model, v.Window, name, rt.Window(i))
			}
			if err != nil {
				problems = append(problems, err.Error()+"; "+name+" runs without it")
				fmt.Fprintln(os.Stderr, "agenthost-wakeword:", problems[len(problems)-1])
				v = nil
			}
			o.Verifiers = append(o.Verifiers, v)
			if v != nil {
				ready.Verified = append(ready.Verified, name)
			}
		}
		ready.VerifierError = strings.Join(problems, "; ")
	}
	det, err := wakeword.NewDetectorWith(rt, names, o)
	if err != nil {
		rt.Close()
		return nil, ready, nil, err
	}
	return det, ready, rt.Close, nil
}

// parsePoints reads the --point flags (MODEL=THRESHOLD,OVER) into the
// models' operating points, by model; a model without one runs at
// heads.PointUnder's, as the host runs it.
func parsePoints(flags, models []string, global wakeword.Point) ([]wakeword.Point, error) {
	points := make([]wakeword.Point, len(models))
	for i, m := range models {
		if p, own := heads.PointUnder(m, global); own {
			points[i] = p
		}
	}
	for _, f := range flags {
		eq := strings.LastIndexByte(f, '=')
		t, n, ok := strings.Cut(f[eq+1:], ",")
		if eq < 0 || !ok {
			return nil, fmt.Errorf("--point %s: give MODEL=THRESHOLD,OVER", f)
		}
		i := slices.Index(models, f[:eq])
		if i < 0 {
			return nil, fmt.Errorf("--point %s: %s is not one of the models", f, f[:eq])
		}
		th, err := strconv.ParseFloat(t, 64)
		if err != nil || !(th > 0 && th < 1) {
			return nil, fmt.Errorf("--point %s: threshold %s is outside (0, 1)", f, t)
		}
		over, err := strconv.Atoi(n)
		if err != nil || over < 1 || over > 10 {
			return nil, fmt.Errorf("--point %s: %s in a row is outside 1…10", f, n)
		}
		points[i] = wakeword.Point{Threshold: th, Over: over}
	}
	return points, nil
}

// loaded is the runtime of the models given: ONNX Runtime's, with the
// own models (package heads) run in Go among them.
type loaded struct {
	wakeword.Runtime
	close func()
}

func (l *loaded) Close() { l.close() }

// open loads the library and the models.
func open(dir, lib string, models []string) (*loaded, []string, string, string, error) {
	var err error
	if lib == "" {
		if lib, err = wakeword.FindONNXRuntime(dir); err != nil {
			return nil, nil, "", "", err
		}
	}
	version, err := ort.Init(lib)
	if err != nil {
		return nil, nil, "", "", err
	}
	paths := ort.Paths{}
	if paths.Mel, err = wakeword.ModelFile(dir, wakeword.MelModel); err != nil {
		return nil, nil, "", "", err
	}
	if paths.Embedding, err = wakeword.ModelFile(dir, wakeword.EmbeddingModel); err != nil {
		return nil, nil, "", "", err
	}
	var names []string
	var own []*wakeword.Head // by model: its head, nil for an ONNX model
	for _, m := range models {
		if heads.Is(m) {
			h, err := heads.Load(m)
			if err != nil {
				return nil, nil, "", "", err
			}
			own, names = append(own, h), append(names, m)
			continue
		}
		p, err := wakeword.ModelFile(dir, m)
		if err != nil && !wakeword.IsPath(m) {
			return nil, nil, "", "", fmt.Errorf("%w (built in, without a file: %s)", err, strings.Join(heads.Names(), ", "))
		}
		if err != nil {
			return nil, nil, "", "", err
		}
		paths.Wake = append(paths.Wake, p)
		own, names = append(own, nil), append(names, wakeword.ModelName(m))
	}
	rt, err := ort.Open(paths)
	if err != nil {
		return nil, nil, "", "", err
	}
	all, err := wakeword.WithHeads(rt, own)
	if err != nil {
		rt.Close()
		return nil, nil, "", "", err
	}
	return &loaded{Runtime: all, close: rt.Close}, names, version, lib, nil
}

// serve detects until the input ends.
func serve(det *wakeword.Detector, in io.Reader, w *bufio.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	var pcm []int16
	var buf []byte
	for {
		pos, p, heard, b, err := wakeword.ReadChunk(r, pcm, buf)
		pcm, buf = p, b
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, wakeword.ErrPing):
			w.Write(wakeword.Message{Type: wakeword.KindPong, Pos: det.Pos()}.Encode())
			if err := w.Flush(); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		det.SetHeard(heard)
		found, err := det.Feed(pos, pcm)
		if err != nil {
			return err
		}
		for _, d := range found {
			w.Write(wakeword.Message{Type: wakeword.KindWake, Model: d.Model, Score: d.Score, End: d.End}.Encode())
		}
		if len(found) > 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}
