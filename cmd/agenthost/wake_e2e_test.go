package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/vad"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// wakeScene is the microphone of the wake-word tests: something said
// before the wake phrase, the phrase, the command in the same breath, and
// silence; with where each part is.
type wakeScene struct {
	pcm                          []int16
	beforeEnd                    int // the end of the sentence before the phrase
	phraseStart, phraseEnd       int // the phrase's voice
	commandStart, commandVoicedE int
}

func newWakeScene(t *testing.T) wakeScene {
	say := func(text string) []int16 {
		return audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, text)
	}
	var s wakeScene
	add := func(p []int16) { s.pcm = append(s.pcm, p...) }
	add(make([]int16, 2*16000))
	before := say("the secret code is seven four one")
	add(before)
	s.beforeEnd = len(s.pcm)
	add(make([]int16, 8000))
	phrase := say("hey jarvis")
	s.phraseStart = len(s.pcm) + voicedStart(phrase)
	s.phraseEnd = len(s.pcm) + voicedEnd(phrase)
	add(phrase[:voicedEnd(phrase)])
	add(make([]int16, 2400)) // 150 ms: the same breath
	command := say("what time is it")
	s.commandStart = len(s.pcm) + voicedStart(command)
	s.commandVoicedE = len(s.pcm) + voicedEnd(command)
	add(command)
	add(make([]int16, 8*16000))
	return s
}

func voicedEnd(p []int16) int {
	n := len(p) / 160 * 160
	for n > 0 && vad.DBFS(p[n-160:n]) < -45 {
		n -= 160
	}
	return n
}

func voicedStart(p []int16) int {
	n := 0
	for n+160 <= len(p) && vad.DBFS(p[n:n+160]) < -45 {
		n += 160
	}
	return n
}

// arrivals records when the simulator first holds each AUDIO frame.
type arrivals struct {
	mu   sync.Mutex
	at   []time.Time
	task []string
	size []int
}

func watchAudio(ctx context.Context, sim *voicetest.Server) *arrivals {
	a := &arrivals{}
	go sim.WaitFor(ctx, func() bool {
		var n int
		now := time.Now()
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, r := range sim.Received() {
			if r.Frame.Type != voice.TypeAudio {
				continue
			}
			if n >= len(a.at) {
				a.at, a.task, a.size = append(a.at, now), append(a.task, r.Frame.Task), append(a.size, len(r.Frame.Payload)/2)
			}
			n++
		}
		return false
	})
	return a
}

func wakeSets(t testing.TB, input string) []string {
	f := wakewordtest.Fetch(t)
	testbin.Build(t, "./cmd/agenthost-wakeword") // beside the host, where it looks first
	return []string{"audio.backend=file", "audio.input_file=" + input,
		"conversation.wake_word.models=hey_jarvis", "conversation.wake_word.dir=" + f.Dir, "conversation.wake_word.onnxruntime=" + f.ONNXRuntime}
}

// TestWakeWordTurnEndToEnd: the real daemon (file microphone, paced) with
// the real detector and models hears a spoken "hey jarvis" followed by a
// command in the same breath. The simulator gets no AUDIO frame before the
// phrase has been spoken, nothing of what was said before it, and the
// command whole; push-to-talk mode ends the turn by the local end of
// speech, the reply plays, and the speaker waits for the wake word again.
func TestWakeWordTurnEndToEnd(t *testing.T) {
	scene := newWakeScene(t)
	input := filepath.Join(t.TempDir(), "mic.s16")
	if err := audiotest.WriteRaw(input, scene.pcm); err != nil {
		t.Fatal(err)
	}
	sim := newSim(t, voicetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arr := watchAudio(ctx, sim)
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual")...)
	d.logShows("wake word on")
	var task string
	ctx15, cancel15 := context.WithTimeout(ctx, 30*time.Second)
	defer cancel15()
	if err := sim.WaitFor(ctx15, func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeEnd {
				task = r.Frame.Task
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no turn ended: %v; host log:\n%s", err, d.log)
	}
	got := audiotest.BytesToSamples(sim.Audio(task))
	at := -1
	for i := 0; i+len(got) <= len(scene.pcm); i++ {
		if scene.pcm[i] == got[0] && slices.Equal(scene.pcm[i:i+len(got)], got) {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatalf("the %d samples received are not a run of the microphone's file", len(got))
	}
	end := at + len(got)
	ms := func(n int) int { return n * 1000 / 16000 }
	t.Logf("the turn's audio is the microphone's %d…%d ms; the phrase was %d…%d ms, the command %d…%d ms", ms(at), ms(end), ms(scene.phraseStart), ms(scene.phraseEnd), ms(scene.commandStart), ms(scene.commandVoicedE))
	if at < scene.phraseStart {
		t.Errorf("audio from %d ms was sent: before the wake phrase (%d ms)", ms(at), ms(scene.phraseStart))
	}
	if at > scene.commandStart || end < scene.commandVoicedE {
		t.Errorf("the command (%d…%d ms) did not reach the server whole (%d…%d ms)", ms(scene.commandStart), ms(scene.commandVoicedE), ms(at), ms(end))
	}
	// When did the first frame arrive, against the microphone's clock? A
	// paced frame can arrive no sooner than its last sample was captured:
	// t0 ≤ arrival − (its end)/rate for every frame, so the smallest bound
	// is an upper bound of the microphone's start t0.
	arr.mu.Lock()
	var t0 time.Time
	pos := at
	var first time.Time
	for i := range arr.at {
		if arr.task[i] != task {
			t.Errorf("an AUDIO frame on task %s, not the wake turn's %s", arr.task[i], task)
			continue
		}
		if first.IsZero() {
			first = arr.at[i]
		}
		pos += arr.size[i]
		b := arr.at[i].Add(-time.Duration(pos) * time.Second / 16000)
		if t0.IsZero() || b.Before(t0) {
			t0 = b
		}
	}
	arr.mu.Unlock()
	phraseDone := t0.Add(time.Duration(scene.phraseEnd) * time.Second / 16000)
	t.Logf("the first AUDIO frame arrived %s after the phrase was spoken (at the latest)", first.Sub(phraseDone).Round(time.Millisecond))
	if first.Before(phraseDone) {
		t.Errorf("the first AUDIO frame arrived %s before the wake phrase ended", phraseDone.Sub(first))
	}
	// The status says it is on and counts the detection; the reply played
	// and no second turn started without the wake word.
	var st struct {
		WakeWord struct {
			On         bool
			Detections int64
			PID        int
		} `json:"wake_word"`
	}
	out, err := d.cli("status")
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(out), &st)
	if !st.WakeWord.On || st.WakeWord.Detections < 1 {
		t.Fatalf("status: %s", out)
	}
	time.Sleep(2 * time.Second) // the reply plays; the file's silence goes on
	turns := map[string]bool{}
	for _, r := range sim.Received() {
		if r.Frame.Type == voice.TypeAudio {
			turns[r.Frame.Task] = true
		}
	}
	if len(turns) != 1 {
		t.Fatalf("%d turns streamed audio; want the one the wake word started", len(turns))
	}
	// Stopping the daemon leaves no detector behind.
	pid := st.WakeWord.PID
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if !procs.Gone(pid, 5*time.Second) {
		t.Fatalf("the detector %d outlived the daemon", pid)
	}
}

// TestWakeWordOffKeepsTheSpeaker: a detector that cannot run (no ONNX
// Runtime), or that is killed, never stops the link, the control socket or
// push-to-talk; status says the wake word is off and why.
func TestWakeWordOffKeepsTheSpeaker(t *testing.T) {
	scene := newWakeScene(t)
	input := filepath.Join(t.TempDir(), "mic.s16")
	if err := audiotest.WriteRaw(input, scene.pcm); err != nil {
		t.Fatal(err)
	}
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual", "conversation.wake_word.onnxruntime=/nonexistent/libonnxruntime.so.1")...)
	d.logShows("cannot run")
	waitFor(t, sim, "the link", func() bool { return sim.Open() == 1 })
	var st hostStatusWake
	st.get(t, d)
	if st.WakeWord.On || st.WakeWord.Why == "" {
		t.Fatalf("status: %+v", st.WakeWord)
	}
	t.Logf("status says: %s: %s", st.WakeWord.State, st.WakeWord.Why)
	// Push-to-talk still works through the control socket.
	if _, err := d.cli("talk", "start"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sim, "audio from push-to-talk", func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeAudio {
				return true
			}
		}
		return false
	})
	if _, err := d.cli("talk", "stop"); err != nil {
		t.Fatal(err)
	}
}

// silentWakeHost runs the daemon in manual mode with the wake word on and a
// silent microphone, once the detector is up.
func silentWakeHost(t *testing.T) (*voicetest.Server, *hostProc) {
	t.Helper()
	input := filepath.Join(t.TempDir(), "mic.s16")
	if err := audiotest.WriteRaw(input, make([]int16, 16000)); err != nil {
		t.Fatal(err)
	}
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual")...)
	d.logShows("wake word on")
	return sim, d
}

// TestWakeWordDetectorKilled: killing the detector under a running daemon
// restarts it; the link stays up.
func TestWakeWordDetectorKilled(t *testing.T) {
	t.Parallel()
	sim, d := silentWakeHost(t)
	waitFor(t, sim, "the link", func() bool { return sim.Open() == 1 })
	var st hostStatusWake
	st.get(t, d)
	pid := st.WakeWord.PID
	if pid <= 0 { // syscall.Kill would take it for the test's process group
		t.Fatalf("status names no detector process: %+v", st.WakeWord)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	d.logShows("wake-word detector restarted")
	st.get(t, d)
	if !st.WakeWord.On || st.WakeWord.PID == pid || st.WakeWord.Restarts != 1 {
		t.Fatalf("status after the kill: %+v", st.WakeWord)
	}
	if sim.Connections() != 1 || sim.Open() != 1 {
		t.Fatalf("the link dropped: %d connections, %d open", sim.Connections(), sim.Open())
	}
}

// TestTheDeviceStatusKnowsTheWakeWord: get_device_status, which the
// server's model reads to tell the user how the speaker is, says the wake
// word is on while the detector runs.
func TestTheDeviceStatusKnowsTheWakeWord(t *testing.T) {
	t.Parallel()
	sim, _ := silentWakeHost(t)
	ready(t, sim, 1)
	res := call(t, sim, "get_device_status", `{}`)
	var st device.Status
	if err := json.Unmarshal(res.Data, &st); err != nil || st.WakeWord != "on" {
		t.Fatalf("get_device_status with the wake word running: %s %s", res.Error, res.Data)
	}
}

type hostStatusWake struct {
	WakeWord struct {
		On       bool
		State    string
		Why      string
		PID      int
		Restarts int
	} `json:"wake_word"`
}

func (s *hostStatusWake) get(t *testing.T, d *hostProc) {
	t.Helper()
	out, err := d.cli("status")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), s); err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
}

// TestHostLinksNoONNXRuntime: the daemon's binary carries no ONNX Runtime
// binding: the library and the models load in the detector's process only,
// so with the wake word off the host is what it was without it.
func TestHostLinksNoONNXRuntime(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "./cmd/agenthost")
	cmd.Dir = testbin.ModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "onnxruntime") || strings.HasSuffix(dep, "/wakeword/ort") {
			t.Errorf("cmd/agenthost depends on %s", dep)
		}
	}
}

// TestCheckNamesAWrongWakeModelOrLibrary: `agenthost check` runs the
// detector once: it says OK with what it loaded, or names the model or
// library that is wrong, and fails.
func TestCheckNamesAWrongWakeModelOrLibrary(t *testing.T) {
	sets := wakeSets(t, "/dev/null")
	bin := testbinHost(t)
	cfg := filepath.Join(t.TempDir(), "none.yaml")
	os.WriteFile(cfg, []byte("# defaults\n"), 0o600)
	missing := "/tmp/nowhere/mine.onnx: stat"
	if os.Geteuid() == 0 {
		// As root the detector first refuses a path any user could make.
		missing = "/tmp/nowhere is missing from /tmp, where any user may make it"
	}
	for _, tc := range []struct {
		set, want string
		ok        bool
	}{
		{"conversation.wake_word.models=hey_jarvis", "wake word: OK: models hey_jarvis, ONNX Runtime 1.30.0", true},
		{"conversation.wake_word.models=hey_jarvs", `wake model "hey_jarvs" is not in`, false},
		{"conversation.wake_word.models=/tmp/nowhere/mine.onnx", missing, false},
		{"conversation.wake_word.onnxruntime=/nonexistent/libonnxruntime.so.1", "the ONNX Runtime library /nonexistent/libonnxruntime.so.1", false},
	} {
		args := []string{"check", "--offline", "--config", cfg}
		for _, s := range append(sets, tc.set) {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(bin, args...).CombinedOutput()
		if (err == nil) != tc.ok || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: err %v, output lacks %q:\n%s", tc.set, err, tc.want, out)
		}
	}
}

// TestWakeWordWithTheDevice: with the microphone muted the wake phrase is
// not heard (no detection, no AUDIO frame); on again, the phrase said while
// a timer rings stops the ringing and starts the turn.
func TestWakeWordWithTheDevice(t *testing.T) {
	say := func(text string) []int16 {
		return audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, text)
	}
	var pcm []int16
	pcm = append(pcm, make([]int16, 4*16000)...)
	pcm = append(pcm, say("hey jarvis, what time is it")...)
	mutedPhraseEnd := len(pcm)
	pcm = append(pcm, make([]int16, 8*16000)...)
	pcm = append(pcm, say("hey jarvis, stop")...)
	pcm = append(pcm, make([]int16, 8*16000)...)
	dir := t.TempDir()
	input := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(input, pcm); err != nil {
		t.Fatal(err)
	}
	hooks := newHookLog(t, dir)
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual", "plugins.state_dir="+filepath.Join(dir, "state"),
		"conversation.hooks.timer="+hooks.set(), "device.ring.timeout=1h")...)
	ready(t, sim, 1) // the control socket is up before the register
	if out, err := d.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v %s", err, out)
	}
	// 60 ms frames: wait until the first phrase is well past.
	d.waitWithheld(t, int64(mutedPhraseEnd/960+20))
	var st struct {
		WakeWord struct{ Detections int64 } `json:"wake_word"`
	}
	out, err := d.cli("status")
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(out), &st)
	if st.WakeWord.Detections != 0 || audioFrames(sim) != 0 {
		t.Fatalf("with the microphone muted: %d detections, %d AUDIO frames; want none", st.WakeWord.Detections, audioFrames(sim))
	}
	if res := call(t, sim, "set_timer", `{"seconds":1,"label":"tea"}`); !res.Success {
		t.Fatalf("set_timer: %+v", res)
	}
	hooks.wait(t, "tea", "ringing")
	if out, err := d.cli("mic", "on"); err != nil || !strings.Contains(out, "microphone on") {
		t.Fatalf("agenthost mic on: %v %s", err, out)
	}
	hooks.wait(t, "tea", "stopped")
	waitFor(t, sim, "the wake turn's audio", func() bool { return audioFrames(sim) > 0 })
	d.logShows("whoever said the wake word")
}
