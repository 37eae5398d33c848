package wakeword

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/vad"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/heads"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/backoff"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type rig struct {
	d        *Detector
	log      *logBuf
	wakes    chan wakeword.Detection
	stop     func()
	sounding atomic.Bool // the speaker sounds (Options.Sounding)
}

func settings(t *testing.T) Settings {
	s := settingsB(t)
	s.Gate = true
	return s
}

// newRig runs a detector (the real binary, built with tags) until the test ends.
func newRig(t *testing.T, s Settings, tags ...string) *rig {
	t.Helper()
	return newRigOf(t, testbin.Build(t, "./cmd/agenthost-wakeword", tags...), s)
}

// newRigOf runs the detector binary command until the test ends, pinged
// as the daemon pings it (every 10 s, an answer due within 6 s): a busy
// machine delays the answer a while, and a restart in the middle of a
// test's phrase would lose it.
func newRigOf(t *testing.T, command string, s Settings) *rig {
	t.Helper()
	r := &rig{log: &logBuf{}, wakes: make(chan wakeword.Detection, 16)}
	r.d = New(Options{Command: command, Settings: s,
		Log:    slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnWake: func(d wakeword.Detection) { r.wakes <- d }, Sounding: r.sounding.Load,
		Restart: backoff.Backoff{Base: 50 * time.Millisecond, Cap: 100 * time.Millisecond}, MaxCrashes: 3, CrashWindow: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.d.Run(ctx, func() {})
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(r.stop)
	select {
	case <-r.d.Settled():
	case <-time.After(60 * time.Second):
		t.Fatalf("the detector did not settle; log:\n%s", r.log)
	}
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// phrase is "hey jarvis" after 3 s of silence, then 2 s of silence, and
// where the phrase's voice ends.
func phrase(t *testing.T) ([]int16, int) {
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	pcm := append(make([]int16, 3*wakeword.Rate), words...)
	end := len(pcm)
	return append(pcm, make([]int16, 2*wakeword.Rate)...), end
}

// feed hands pcm to the detector from pos in 60 ms frames, paced at twice
// real time, and slower when the detector falls behind, so that its
// queue never fills.
func feed(d *Detector, pos int64, pcm []int16) int64 {
	return feedHeard(d, pos, pcm, false)
}

// feedHeard is feed with each frame taken for the speaker's own sound
// alone, or not.
func feedHeard(d *Detector, pos int64, pcm []int16, ownSound bool) int64 {
	for i := 0; i < len(pcm); i += 960 {
		f := pcm[i:min(i+960, len(pcm))]
		// On a busy machine the detector falls behind twice real time:
		// wait rather than have its queue drop the test's audio.
		for c, _ := d.sup.Running().(*child); c != nil && len(c.queue) > queueChunks/2; c, _ = d.sup.Running().(*child) {
			time.Sleep(10 * time.Millisecond)
		}
		d.Feed(pos, f, ownSound)
		pos += int64(len(f))
		time.Sleep(30 * time.Millisecond)
	}
	return pos
}

// TestDetectorHearsTheWakeWord: the real detector process, fed a spoken
// "hey jarvis", reports it at the right place in the stream; status says
// the wake word is on.
func TestDetectorHearsTheWakeWord(t *testing.T) {
	r := newRig(t, settings(t))
	st := r.d.Status()
	if !st.On || st.State != supervise.StateRunning || st.PID == 0 {
		t.Fatalf("status %+v; log:\n%s", st, r.log)
	}
	pcm, end := phrase(t)
	feed(r.d, 1000, pcm)
	select {
	case d := <-r.wakes:
		lag := int(d.End) - (1000 + end)
		t.Logf("detected %s %.3f, %d ms after the end of the words", d.Model, d.Score, lag/16)
		if d.Model != "hey_jarvis" || lag < -wakeword.Rate || lag > wakeword.Rate {
			t.Fatalf("detection %+v, words end at %d", d, 1000+end)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no detection; log:\n%s", r.log)
	}
	if st := r.d.Status(); st.Detections != 1 || st.ByModel["hey_jarvis"] != 1 {
		t.Fatalf("status %+v", st)
	}
	pid := r.d.Status().PID
	r.stop()
	if !procs.Gone(pid, 5*time.Second) {
		t.Fatalf("the detector %d outlived its host's stop", pid)
	}
}

// TestWhileTheSpeakerSoundsTheOwnHeadIsHeldToItsStricterPoint: the own
// head hears a phrase it scores between its point (0.9) and its point while
// the speaker sounds (0.98): fed while the host says the speaker sounds,
// the real detector process stays silent; the same phrase fed next, the
// speaker quiet, wakes it, and the first detection is that one.
func TestWhileTheSpeakerSoundsTheOwnHeadIsHeldToItsStricterPoint(t *testing.T) {
	s := settings(t)
	s.Models, s.Gate = []string{heads.HeyJarvis}, false // no gate: the models' 20 ms grid starts at 0
	r := newRig(t, s)
	// en-gb at 140 wpm, pitch 50, over faint noise: the own head's best two
	// scores in a row on it are 0.918 (its test in audio/wakeword/ort).
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140, Pitch: 50}, "hey jarvis")
	pcm := append(append(make([]int16, 2*wakeword.Rate), words...), make([]int16, 2*wakeword.Rate)...)
	pcm = append(pcm, make([]int16, 320-len(pcm)%320)...) // the second copy on the same grid
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range pcm {
		pcm[i] = int16(max(-32768, min(32767, math.Round(float64(pcm[i])+32768*0.001*rng.NormFloat64()))))
	}
	r.sounding.Store(true)
	pos := feed(r.d, 0, pcm)
	r.sounding.Store(false)
	second := pos
	feed(r.d, pos, pcm)
	r.firstWakeFrom(t, second, "said while the speaker sounded", "said while the speaker was quiet")
}

// TestWhileTheSpeakerSoundsAWakeNeedsAVoiceTheCancellerHeard: a phrase the
// own head is sure of (en-us, clean: 0.999), fed while the speaker sounds
// and marked as its own sound alone (the capture chain's canceller heard
// no voice in it), wakes nothing through the real detector process; the
// same phrase next, not so marked, wakes it, and the first detection is
// that one. The log says the point while sounding.
func TestWhileTheSpeakerSoundsAWakeNeedsAVoiceTheCancellerHeard(t *testing.T) {
	s := settings(t)
	s.Models, s.Gate = []string{heads.HeyJarvis}, false
	r := newRig(t, s)
	if want := `while_sounding="map[hey_jarvis_agenthost:0.98×2, a voice within 500ms]"`; !strings.Contains(r.log.String(), want) {
		t.Errorf("the log does not say the point while sounding (%s):\n%s", want, r.log)
	}
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-us", WPM: 140}, "hey jarvis")
	pcm := append(append(make([]int16, 2*wakeword.Rate), words...), make([]int16, 2*wakeword.Rate)...)
	r.sounding.Store(true)
	second := feedHeard(r.d, 0, pcm, true)
	feedHeard(r.d, second, pcm, false)
	r.firstWakeFrom(t, second, "taken for the speaker's own sound", "with a voice heard, the speaker sounding,")
}

// firstWakeFrom waits for the first detection and fails unless it is in
// the phrase fed from second on (the one described by woke), not in the
// one fed before it (held).
func (r *rig) firstWakeFrom(t *testing.T, second int64, held, woke string) {
	t.Helper()
	select {
	case d := <-r.wakes:
		if d.End < second {
			t.Fatalf("a detection at %d (score %.3f), in the phrase %s (before %d)", d.End, d.Score, held, second)
		}
		t.Logf("the phrase %s woke it (score %.3f); the one %s did not", woke, d.Score, held)
	case <-time.After(60 * time.Second):
		t.Fatalf("the phrase %s woke nothing; log:\n%s", woke, r.log)
	}
}

// TestAPhraseAfterALongSilenceIsHeard: "hey jarvis" as the first sound
// after 20 s of a quiet room (noise at -65 dBFS) is detected, at the
// place of its end: nothing the detector needs of the phrase's context is
// lost to the quiet before it.
func TestAPhraseAfterALongSilenceIsHeard(t *testing.T) {
	r := newRig(t, settings(t))
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	rng := rand.New(rand.NewPCG(5, 6))
	const at = 20 * wakeword.Rate
	pcm := roomNoise(rng, at+len(words)+3*wakeword.Rate, -65)
	for i, v := range words {
		pcm[at+i] = int16(max(-32768, min(32767, int(pcm[at+i])+int(v))))
	}
	end := at + voicedEnd(words)
	feed(r.d, 0, pcm)
	select {
	case d := <-r.wakes:
		lag := int(d.End) - end
		t.Logf("detected %s %.3f, %d ms after the end of the words", d.Model, d.Score, lag/16)
		if d.Model != "hey_jarvis" || lag < -wakeword.Rate/2 || lag > wakeword.Rate {
			t.Fatalf("detection %+v, words end at %d", d, end)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no detection; status %+v; log:\n%s", r.d.Status(), r.log)
	}
}

// TestAQuietRoomIsNotHandedToTheDetector: with the gate on (the
// default), the detector hears nothing of a quiet room once the gate has
// heard it, and still hears the phrase that ends the quiet; Status counts
// what the gate held back. With the gate off it hears everything.
func TestAQuietRoomIsNotHandedToTheDetector(t *testing.T) {
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	rng := rand.New(rand.NewPCG(7, 8))
	const at = 12 * wakeword.Rate
	pcm := roomNoise(rng, at+len(words)+3*wakeword.Rate, -65)
	for i, v := range words {
		pcm[at+i] = int16(max(-32768, min(32767, int(pcm[at+i])+int(v))))
	}
	for _, on := range []bool{true, false} {
		s := settings(t)
		s.Gate = on
		r := newRig(t, s)
		feed(r.d, 0, pcm)
		select {
		case <-r.wakes:
		case <-time.After(30 * time.Second):
			t.Fatalf("gate %v: no detection; status %+v; log:\n%s", on, r.d.Status(), r.log)
		}
		st := r.d.Status()
		t.Logf("gate %v: %.1f s held back of %.1f s", on, st.GatedSeconds, float64(len(pcm))/wakeword.Rate)
		if on && st.GatedSeconds < 6 || !on && st.GatedSeconds != 0 || st.DroppedSeconds != 0 {
			t.Errorf("gate %v: status %+v", on, st)
		}
		r.stop()
	}
}

// roomNoise is n samples of white noise at dbfs (RMS).
func roomNoise(rng *rand.Rand, n int, dbfs float64) []int16 {
	a := math.Pow(10, dbfs/20) * 32768
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(max(-32768, min(32767, math.Round(a*rng.NormFloat64()))))
	}
	return out
}

// voicedEnd is the end of the last 10 ms louder than -45 dBFS.
func voicedEnd(words []int16) int {
	n := len(words) / 160 * 160
	for n > 0 && vad.DBFS(words[n-160:n]) < -45 {
		n -= 160
	}
	return n
}

// TestMissingLibraryTurnsTheWakeWordOff: without ONNX Runtime the detector
// does not run, Status says why, and feeding it neither blocks nor fails.
func TestMissingLibraryTurnsTheWakeWordOff(t *testing.T) {
	s := settings(t)
	s.ONNXRuntime = "/nonexistent/libonnxruntime.so.1"
	r := newRig(t, s)
	st := r.d.Status()
	if st.On || st.State != supervise.StateBroken || !strings.Contains(st.Why, "/nonexistent/libonnxruntime.so.1") {
		t.Fatalf("status %+v", st)
	}
	t.Logf("status: %+v", st)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 1000; i++ {
			r.d.Feed(int64(i*960), make([]int16, 960), false)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Feed blocked without a detector")
	}
	if st := r.d.Status(); st.DroppedSeconds < 50 {
		t.Fatalf("dropped %.1f s, want the 60 s fed", st.DroppedSeconds)
	}
	// The library appears; a reload tries again with the same settings.
	r.d.Reload(settings(t))
	waitFor(t, "the detector to run after a reload", func() bool { return r.d.Status().On })
}

// TestDetectorCrashAndHang: a detector killed is restarted (and hears
// again); one that hangs (stopped) fails its ping and is restarted; one
// that keeps dying is parked, and status says so. The detector is pinged
// as the daemon pings it: with a ping every 300 ms, due within 1.15 s, a
// ping waited behind up to 1.5 s of the phrase queued for a detector that a
// busy machine slowed, which was then restarted as hung and never heard
// the phrase.
func TestDetectorCrashAndHang(t *testing.T) {
	r := newRig(t, settings(t))
	pid := r.detectorPID(t)
	syscall.Kill(pid, syscall.SIGKILL)
	waitFor(t, "a restart after a crash", func() bool { st := r.d.Status(); return st.On && st.PID != pid })
	pcm, _ := phrase(t)
	feed(r.d, 0, pcm)
	select {
	case <-r.wakes:
	case <-time.After(30 * time.Second):
		t.Fatalf("the restarted detector hears nothing; log:\n%s", r.log)
	}
	pid = r.detectorPID(t)
	syscall.Kill(pid, syscall.SIGSTOP)
	waitFor(t, "a restart after a hang", func() bool { st := r.d.Status(); return st.On && st.PID != pid })
	if !procs.Gone(pid, 5*time.Second) {
		t.Fatalf("the hung detector %d was left behind", pid)
	}
	if !strings.Contains(r.log.String(), "hangs") {
		t.Fatalf("the log does not say it hung:\n%s", r.log)
	}
	for i := 0; i < 5 && r.d.Status().State != supervise.StateParked; i++ {
		if p := r.d.Status().PID; p != 0 {
			syscall.Kill(p, syscall.SIGKILL)
		}
		waitFor(t, "a restart or park", func() bool {
			st := r.d.Status()
			return st.State == supervise.StateParked || (st.On && st.PID != pid)
		})
		pid = r.d.Status().PID
	}
	st := r.d.Status()
	if st.On || st.State != supervise.StateParked || !strings.Contains(st.Why, "crashed") {
		t.Fatalf("status %+v", st)
	}
	t.Logf("parked: %s", st.Why)
}

// TestJunkOnStdoutNeverReachesTheProtocol: what a library prints on the
// detector's standard output goes to its stderr (the host's log), and the
// protocol goes on.
func TestJunkOnStdoutNeverReachesTheProtocol(t *testing.T) {
	r := newRig(t, settings(t), "testkit")
	if !r.d.Status().On {
		t.Fatalf("status %+v; log:\n%s", r.d.Status(), r.log)
	}
	pcm, _ := phrase(t)
	feed(r.d, 0, pcm)
	select {
	case <-r.wakes:
	case <-time.After(30 * time.Second):
		t.Fatalf("no detection; log:\n%s", r.log)
	}
	if !strings.Contains(r.log.String(), "junk written to fd 1") || strings.Contains(r.log.String(), "broke its protocol") {
		t.Fatalf("log:\n%s", r.log)
	}
}

// TestFramesLongerThanASecondReachTheDetector: audio.frame may be longer
// than the protocol's chunk (1 s); such a frame is sent as several chunks,
// the detector hears through it, and it is never killed for it.
func TestFramesLongerThanASecondReachTheDetector(t *testing.T) {
	r := newRig(t, settings(t))
	pid := r.d.Status().PID
	pcm, _ := phrase(t)
	const frame = 3 * wakeword.Rate / 2 // audio.frame: 1500ms
	for pos := 0; pos < len(pcm); pos += frame {
		r.d.Feed(int64(pos), pcm[pos:min(pos+frame, len(pcm))], false)
	}
	select {
	case <-r.wakes:
	case <-time.After(30 * time.Second):
		t.Fatalf("no detection; status %+v; log:\n%s", r.d.Status(), r.log)
	}
	if st := r.d.Status(); !st.On || st.PID != pid || st.Restarts != 0 || st.DroppedSeconds != 0 {
		t.Fatalf("status %+v (the detector was %d); log:\n%s", st, pid, r.log)
	}
}

// detectorPID waits for a running detector and returns its process ID,
// never 0: syscall.Kill takes 0 for the test's own process group, which
// go test shares (a SIGSTOP sent while the detector was between restarts
// stopped the test and all that ran beside it).
func (r *rig) detectorPID(t *testing.T) int {
	t.Helper()
	var pid int
	waitFor(t, "a running detector", func() bool { st := r.d.Status(); pid = st.PID; return st.On && pid > 0 })
	return pid
}

// park kills the detector until it is parked.
func (r *rig) park(t *testing.T) {
	t.Helper()
	for r.d.Status().State != supervise.StateParked {
		pid := r.d.Status().PID
		if pid != 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		waitFor(t, "a restart or park", func() bool {
			st := r.d.Status()
			return st.State == supervise.StateParked || (st.On && st.PID != pid)
		})
	}
}

// TestAParkedDetectorStartsAgainWhenItsBinaryChanges: as the log says, a
// parked detector is tried again when its binary is touched or installed
// again (renamed over), without a reload.
func TestAParkedDetectorStartsAgainWhenItsBinaryChanges(t *testing.T) {
	dir := t.TempDir()
	built := testbin.Build(t, "./cmd/agenthost-wakeword")
	bin := filepath.Join(dir, Binary)
	install := func() {
		b, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "."+Binary+".tmp")
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, bin); err != nil {
			t.Fatal(err)
		}
	}
	install()
	r := newRigOf(t, bin, settings(t))
	for _, how := range []string{"touched", "installed again"} {
		r.park(t)
		if !strings.Contains(r.log.String(), "`touch` it") {
			t.Fatalf("the log does not say how to retry:\n%s", r.log)
		}
		pid := r.d.Status().PID
		if how == "touched" {
			now := time.Now()
			os.Chtimes(bin, now, now)
		} else {
			install()
		}
		waitFor(t, "the parked detector to start again when its binary is "+how, func() bool {
			st := r.d.Status()
			return st.On && st.PID != pid
		})
	}
	pcm, _ := phrase(t)
	feed(r.d, 0, pcm)
	select {
	case <-r.wakes:
	case <-time.After(30 * time.Second):
		t.Fatalf("the revived detector hears nothing; log:\n%s", r.log)
	}
}
