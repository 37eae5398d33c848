// Package wakeword runs the wake-word detector (cmd/agenthost-wakeword) as
// a supervised child of the host (host/supervise): started under a
// deadline, fed the microphone's 16 kHz audio over a pipe, health-checked
// by a ping that must come back through all queued audio, restarted with
// backoff when it crashes or hangs, parked when it keeps failing (and tried
// again when its binary is touched or installed again), stopped with the
// host and never left behind. ONNX Runtime and the models live in
// that process only; when the detector cannot run, the speaker goes on
// without it (its button, control socket, link and playback), and Status
// says that the wake word is off and why.
package wakeword

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio/gate"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/heads"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/backoff"
)

// Binary is the detector's file name.
const Binary = "agenthost-wakeword"

// VerifierFolder is the state folder's folder of the owners' verifiers
// (`agenthost wakeword enroll` writes them; Settings.Verifiers).
const VerifierFolder = "wakeword"

// LibDir is where the package installs the detector.
const LibDir = "/usr/lib/agenthost"

// FindBinary looks for the detector beside the running executable (a build
// tree's bin/, a test's folder), then in LibDir.
func FindBinary() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), Binary)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(LibDir, Binary)
}

// Settings are what the detector is started with.
type Settings struct {
	Models      []string
	Threshold   float64
	Dir         string // the fetch script's folder: models/, onnxruntime/
	ONNXRuntime string // "" finds it (wakeword.FindONNXRuntime)
	// Gate: the detector hears nothing of a quiet room (audio/gate); a
	// sound wakes it with the audio of its context. Host side only.
	Gate bool
	// Step is how often the models score (--step); 0 is the detector's own.
	Step time.Duration
	// Over is how many scores in a row must reach the threshold (--over);
	// 0 or 1 is the detector's own (the first).
	Over int
	// PerModel are models' own operating points (--point), by name.
	PerModel map[string]wakeword.Point
	// Verifiers is the folder of the owners' verifiers (--verifiers: the
	// state folder's wakeword/, where `agenthost wakeword enroll` writes
	// them); "" uses none.
	Verifiers string
}

// policy is what the detector may read: its models, library and verifiers.
func (s Settings) policy() sandbox.Policy {
	return sandbox.Policy{Read: []string{s.Dir, s.ONNXRuntime, s.Verifiers}}
}

// Args are the detector's arguments for s.
func (s Settings) Args() []string {
	args := []string{"--dir", s.Dir, "--threshold", strconv.FormatFloat(s.Threshold, 'g', -1, 64)}
	if s.ONNXRuntime != "" {
		args = append(args, "--onnxruntime", s.ONNXRuntime)
	}
	if s.Step > 0 {
		args = append(args, "--step", s.Step.String())
	}
	if s.Over > 1 {
		args = append(args, "--over", strconv.Itoa(s.Over))
	}
	for _, m := range s.Models {
		if p, ok := s.PerModel[m]; ok {
			args = append(args, "--point", fmt.Sprintf("%s=%s,%d", m, strconv.FormatFloat(p.Threshold, 'g', -1, 64), p.Over))
		}
	}
	if s.Verifiers != "" {
		args = append(args, "--verifiers", s.Verifiers)
	}
	return append(append(args, "--"), s.Models...)
}

// Options configure a Detector.
type Options struct {
	Command  string // the detector binary; "" is FindBinary()
	Settings Settings
	Log      *slog.Logger
	// OnWake is called, from the detector's reader, for each detection.
	OnWake func(wakeword.Detection)
	// StartTimeout bounds loading the library and models (30 s when 0).
	StartTimeout time.Duration
	// HealthInterval is how often the detector is pinged (10 s when 0).
	HealthInterval time.Duration
	// Restart, MaxCrashes, CrashWindow: crash handling (1 s…30 s, 5 in 5 min).
	Restart     backoff.Backoff
	MaxCrashes  int
	CrashWindow time.Duration
	// Jail confines the detector (config.Config.Jail): it may read its
	// models, library and verifiers, and write nothing.
	Jail sandbox.Jail
	// Sounding reports whether the speaker itself sounds (or did within
	// its echo's tail): the audio fed then is marked so, and the models'
	// points while sounding apply to it. nil: never.
	Sounding func() bool
	// WatchSettle is how long the detector's binary must be left alone
	// after a change before one that is off is tried again (500 ms when 0).
	WatchSettle time.Duration
}

// Detector is the supervised detector; it is a host component.
type Detector struct {
	o   Options
	log *slog.Logger
	sup *supervise.Supervisor

	detections atomic.Int64
	fed        atomic.Int64 // samples handed to a running detector
	dropped    atomic.Int64 // samples dropped: no detector, or it fell behind
	gated      atomic.Int64 // samples the gate held back (a quiet room)
	gateOn     atomic.Bool

	// The feeding goroutine's: the gate, the detector it last fed, and
	// what of the stream was the speaker's own sound alone.
	gate     *gate.Gate
	fedTo    *child
	sendTo   func(pos int64, pcm []int16)
	ownSound ownSoundRuns

	mu        sync.Mutex
	settings  Settings
	byModel   map[string]int64
	verifiers string // what the verifier folder held when the detector last started
}

// New returns a detector that starts when run.
func New(o Options) *Detector {
	if o.Command == "" {
		o.Command = FindBinary()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = 10 * time.Second
	}
	if o.Restart.Base <= 0 {
		o.Restart = backoff.Backoff{Base: time.Second, Cap: 30 * time.Second}
	}
	if o.MaxCrashes <= 0 {
		o.MaxCrashes = 5
	}
	if o.CrashWindow <= 0 {
		o.CrashWindow = 5 * time.Minute
	}
	if o.WatchSettle <= 0 {
		o.WatchSettle = 500 * time.Millisecond
	}
	log := o.Log.With("component", "wakeword")
	d := &Detector{o: o, log: log, settings: o.Settings, byModel: map[string]int64{}}
	d.gateOn.Store(o.Settings.Gate)
	d.gate, _ = gate.New(gate.Config{Rate: wakeword.Rate, Align: wakeword.Hop})
	d.sup = supervise.New(supervise.Options{
		ID: "wakeword", Kind: "wake-word detector", Name: "wakeword", Registry: noRegistry{}, Log: log,
		StartTimeout: o.StartTimeout, StopGrace: time.Second, Restart: o.Restart,
		MaxCrashes: o.MaxCrashes, CrashWindow: o.CrashWindow, FailedStart: supervise.Broken,
		HealthInterval: o.HealthInterval,
	})
	return d
}

// Name implements part.Part.
func (d *Detector) Name() string { return "wake word" }

// Run starts the detector and keeps it running until ctx ends. A detector
// that cannot run is logged and shown in Status, and tried again when its
// binary changes (see watch); Run still returns only at the end: the
// speaker serves without its wake word.
func (d *Detector) Run(ctx context.Context, ready func()) error {
	d.load()
	ready()
	d.watch(ctx)
	d.sup.Stop()
	return nil
}

func (d *Detector) load() {
	d.mu.Lock()
	s := d.settings
	d.verifiers = folderPrint(s.Verifiers)
	d.mu.Unlock()
	d.sup.Load(func(ctx context.Context) (supervise.Child, error) {
		c, err := start(ctx, d.o.Jail, s, d.o.Command, s.Args(), d.log, d.wake)
		if err != nil {
			return nil, err
		}
		d.log.Info("wake word on", "models", c.ready.Models, "onnxruntime", c.ready.ONNXRuntime, "library", c.ready.Library, "threshold", s.Threshold, "over", max(s.Over, 1), "per_model", s.PerModel, "while_sounding", whileSounding(s.Models), "verified", c.ready.Verified)
		if c.ready.VerifierError != "" {
			d.log.Warn("owner's verifier not used", "error", c.ready.VerifierError)
		}
		return c, nil
	}, nil)
}

// Reload applies new settings: the detector starts again with them. One
// that is off (broken, parked) is tried again even with the same settings,
// since what it lacked (a library, a model) may be there now.
func (d *Detector) Reload(s Settings) {
	d.mu.Lock()
	d.settings = s
	d.mu.Unlock()
	d.gateOn.Store(s.Gate)
	d.load()
}

// VerifiersChanged says whether a verifier was written, replaced or
// deleted since the detector last started (it reads them when it starts).
func (d *Detector) VerifiersChanged() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return folderPrint(d.settings.Verifiers) != d.verifiers
}

// folderPrint names what dir holds: each entry's name, size and time.
func folderPrint(dir string) string {
	if dir == "" {
		return ""
	}
	entries, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// whileSounding are the points of models that have their own while the
// speaker sounds (heads.PointWhileSounding), by name, for the log.
func whileSounding(models []string) map[string]wakeword.Point {
	out := map[string]wakeword.Point{}
	for _, m := range models {
		if p, ok := heads.PointWhileSounding(m); ok {
			out[m] = p
		}
	}
	return out
}

// Settled is closed once the first start has succeeded or failed.
func (d *Detector) Settled() <-chan struct{} { return d.sup.Settled() }

func (d *Detector) wake(det wakeword.Detection) {
	d.detections.Add(1)
	d.mu.Lock()
	d.byModel[det.Model]++
	d.mu.Unlock()
	d.log.Debug("wake word heard", "model", det.Model, "score", det.Score, "end", det.End)
	if d.o.OnWake != nil {
		d.o.OnWake(det)
	}
}

// Feed hands the detector audio at stream position pos, through the gate
// when it is on; ownSound says the capture chain took all of it for the
// speaker's own sound alone (capture.Chain.TakeVoiced false). It never
// blocks: without a running detector, or when it falls behind, the audio
// is dropped. pcm is copied. Feed is called from one goroutine (the
// capture's).
func (d *Detector) Feed(pos int64, pcm []int16, ownSound bool) {
	if ownSound {
		d.ownSound.add(pos, pos+int64(len(pcm)))
	}
	c, _ := d.sup.Running().(*child)
	if c == nil {
		d.dropped.Add(int64(len(pcm)))
		d.fedTo = nil
		return
	}
	if c != d.fedTo {
		d.gate.Replay() // a new detector: its context first
		d.fedTo = c
	}
	if !d.gateOn.Load() {
		d.send(c, pos, pcm) // the gate, on again, sees a gap: it opens
		return
	}
	if d.sendTo == nil {
		d.sendTo = func(pos int64, pcm []int16) { d.send(d.fedTo, pos, pcm) }
	}
	if n := d.gate.Push(pos, pcm, d.sendTo); n < len(pcm) {
		d.gated.Add(int64(len(pcm) - n))
	}
}

func (d *Detector) send(c *child, pos int64, pcm []int16) {
	heard := wakeword.Heard{
		Sounding: d.o.Sounding != nil && d.o.Sounding(),
		OwnSound: d.ownSound.covers(pos, pos+int64(len(pcm))),
	}
	if c.feed(pos, append([]int16(nil), pcm...), heard) {
		d.fed.Add(int64(len(pcm)))
	} else {
		d.dropped.Add(int64(len(pcm)))
	}
}

// Status is the wake word's state for `agenthost status` and metrics.
type Status struct {
	// On: a detector runs and hears the microphone.
	On bool `json:"on"`
	// State is the supervisor's (running, restarting, parked, broken…).
	State string `json:"state"`
	// Why the wake word is off, when it is.
	Why         string           `json:"why,omitempty"`
	Models      []string         `json:"models,omitempty"`
	ONNXRuntime string           `json:"onnxruntime,omitempty"`
	PID         int              `json:"pid,omitempty"`
	Restarts    int              `json:"restarts"`
	Detections  int64            `json:"detections"`
	ByModel     map[string]int64 `json:"by_model,omitempty"`
	// DroppedSeconds is audio the detector did not hear (none running, or
	// it fell behind).
	DroppedSeconds float64 `json:"dropped_seconds"`
	// GatedSeconds is audio the gate held back (a quiet room).
	GatedSeconds float64 `json:"gated_seconds"`
	// Verified are the models the owner's verifier decides for;
	// VerifierError says which verifier file could not serve, and that its
	// model runs without it.
	Verified      []string `json:"verified,omitempty"`
	VerifierError string   `json:"verifier_error,omitempty"`
}

// Status reports the detector's state.
func (d *Detector) Status() Status {
	st := d.sup.Status()
	s := Status{State: st.State, Why: st.LastError, Restarts: st.Restarts, PID: st.Info.PID,
		Detections: d.detections.Load(), DroppedSeconds: float64(d.dropped.Load()) / wakeword.Rate,
		GatedSeconds: float64(d.gated.Load()) / wakeword.Rate}
	if c, ok := d.sup.Running().(*child); ok && c != nil {
		s.On, s.Models, s.ONNXRuntime, s.Why = true, c.ready.Models, c.ready.ONNXRuntime, ""
		s.Verified, s.VerifierError = c.ready.Verified, c.ready.VerifierError
	}
	d.mu.Lock()
	s.ByModel = make(map[string]int64, len(d.byModel))
	for k, v := range d.byModel {
		s.ByModel[k] = v
	}
	d.mu.Unlock()
	return s
}

// noRegistry: the detector offers no services.
type noRegistry struct{}

func (noRegistry) Put(services.Provider) error      { return nil }
func (noRegistry) RemoveProvider(services.Provider) {}
func (noRegistry) Hold(services.Provider)           {}

// Check runs the detector (command, "" for FindBinary) with --check: it
// loads the library and models, runs them once and exits. The error says
// what is wrong.
func Check(ctx context.Context, command string, s Settings) (wakeword.Message, error) {
	if command == "" {
		command = FindBinary()
	}
	args := append([]string{"--check"}, s.Args()...)
	c, err := start(ctx, sandbox.Jail{}, s, command, args, slog.New(slog.DiscardHandler), func(wakeword.Detection) {})
	if err != nil {
		return wakeword.Message{}, fmt.Errorf("wake word: %w", err)
	}
	c.Kill()
	<-c.done
	return c.ready, nil
}
