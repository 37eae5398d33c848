package device_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/capture"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recSink records what reaches the speaker.
type recSink struct {
	mu  sync.Mutex
	got []int16
}

func (r *recSink) Write(p []int16) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p...)
	return len(p), nil
}
func (r *recSink) Close() error { return nil }

// events records the hooks the device runs.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) hook(event string, f map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := event
	for _, k := range []string{"DEVICE", "MUTED", "BY", "ID", "LABEL", "STATE"} {
		if v, ok := f[k]; ok {
			s += " " + k + "=" + v
		}
	}
	e.got = append(e.got, s)
}

func (e *events) all() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.got, "\n")
}

func newDevice(t *testing.T, o device.Options) *device.Device {
	t.Helper()
	d, err := device.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func constant(n int, v int16) []int16 {
	p := make([]int16, n)
	for i := range p {
		p[i] = v
	}
	return p
}

// TestVolumeCurve: the curve is linear in decibels from volume 1 (−range)
// to 100 (0 dB), and 0 is silence.
func TestVolumeCurve(t *testing.T) {
	if g := device.Curve(100, 50); g != 1 {
		t.Errorf("volume 100: gain %g", g)
	}
	if g := device.Curve(0, 50); g != 0 {
		t.Errorf("volume 0: gain %g", g)
	}
	if db := 20 * math.Log10(device.Curve(1, 50)); math.Abs(db+50) > 1e-9 {
		t.Errorf("volume 1: %g dB, want -50", db)
	}
	step := 20 * math.Log10(device.Curve(51, 50)/device.Curve(50, 50))
	for v := 2; v <= 100; v++ {
		if s := 20 * math.Log10(device.Curve(v, 50)/device.Curve(v-1, 50)); math.Abs(s-step) > 1e-9 {
			t.Fatalf("volume %d→%d is %g dB, %d→%d %g dB: not the same step", v-1, v, s, 50, 51, step)
		}
	}
}

// TestVolumeScalesWhatReachesTheSpeaker: the samples that reach the sink
// are scaled as the curve says, for replies and earcons alike (all go
// through the sink), a change ramps over one frame with no step larger than
// the curve allows, and mute is silence.
func TestVolumeScalesWhatReachesTheSpeaker(t *testing.T) {
	const frame = 960 // 60 ms at 16 kHz
	d := newDevice(t, device.Options{Volume: 100, Rate: 16000, Frame: 60 * time.Millisecond})
	rec := &recSink{}
	sink := d.Sink(rec)
	sink.Write(constant(frame, 20000))
	if _, err := d.SetVolume(40, false); err != nil {
		t.Fatal(err)
	}
	earcon := constant(3*frame, 20000) // one long write, as an earcon is
	sink.Write(earcon)
	if earcon[frame] != 20000 {
		t.Fatal("the stage changed the caller's samples")
	}
	sink.Write(constant(frame, 20000))
	got := rec.got
	if got[frame-1] != 20000 {
		t.Fatalf("at volume 100: %d", got[frame-1])
	}
	want := int16(math.Round(20000 * device.Curve(40, device.DefaultRange)))
	from, to := 20000.0, float64(want)
	maxStep := math.Abs(to-from)/frame + 1
	for i := frame; i < 2*frame; i++ {
		if diff := math.Abs(float64(got[i]) - float64(got[i-1])); diff > maxStep {
			t.Fatalf("sample %d steps by %g, more than the ramp's %g: a click", i, diff, maxStep)
		}
	}
	for i := 2 * frame; i < len(got); i++ {
		if got[i] != want {
			t.Fatalf("sample %d is %d after the ramp, want %d (volume 40)", i, got[i], want)
		}
	}
	d.MuteSpeaker(true)
	rec.got = nil
	sink.Write(constant(2*frame, 20000))
	if last := rec.got[len(rec.got)-1]; last != 0 {
		t.Fatalf("muted: %d", last)
	}
	d.SetVolume(-30, true) // a step from 40; setting a volume unmutes
	if v, muted := d.Volume(); v != 10 || muted {
		t.Fatalf("after a step of -30: volume %d, muted %v", v, muted)
	}
	if v, _ := d.SetVolume(200, false); v != 100 {
		t.Fatalf("volume 200 is held at %d", v)
	}
}

// TestTheEchoReferenceHearsTheGain: with the canceller's tap below the gain
// stage (as the host builds it), the reference is what the speaker plays.
func TestTheEchoReferenceHearsTheGain(t *testing.T) {
	d := newDevice(t, device.Options{Volume: 50, Rate: 16000})
	ref := capture.NewReference(16000)
	before := time.Now()
	sink := d.Sink(capture.TapSink(&recSink{}, ref, 16000, 0))
	sink.Write(constant(1600, 20000))
	got := make([]int16, 32000)
	ref.Read(got, before.Add(-time.Second))
	peak := 0
	for _, v := range got {
		peak = max(peak, int(v))
	}
	if want := int(math.Round(20000 * device.Curve(50, device.DefaultRange))); peak != want {
		t.Fatalf("the reference peaks at %d, want %d (after the gain)", peak, want)
	}
}

// TestStatePersists: volume, speaker mute and microphone mute survive a
// restart; a corrupt state file is set aside and reported, and a good one
// (the defaults, the microphone muted) takes its place.
func TestStatePersists(t *testing.T) {
	dir := t.TempDir()
	d := newDevice(t, device.Options{StateDir: dir})
	if v, _ := d.Volume(); v != 70 {
		t.Fatalf("first start: volume %d, want the default 70", v)
	}
	d.SetVolume(35, false)
	d.MuteSpeaker(true)
	d.SetMicMuted(services.CallerVoiceServer, true)
	d2 := newDevice(t, device.Options{StateDir: dir})
	if v, muted := d2.Volume(); v != 35 || !muted || !d2.MicMuted() {
		t.Fatalf("after a restart: volume %d, speaker muted %v, microphone muted %v", v, muted, d2.MicMuted())
	}
	if d2.Gain() != 0 {
		t.Fatalf("a muted speaker restarts with gain %g", d2.Gain())
	}
	os.WriteFile(filepath.Join(dir, "state.json"), []byte("{\"volume\": 3"), 0o600)
	d3 := newDevice(t, device.Options{StateDir: dir})
	w := strings.Join(d3.Warnings(), "\n")
	if !strings.Contains(w, "set aside as") {
		t.Fatalf("warnings: %q", w)
	}
	if v, _ := d3.Volume(); v != 70 {
		t.Fatalf("after a corrupt file: volume %d", v)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "state.json.corrupt-*"))
	if b, err := os.ReadFile(filepath.Join(dir, "state.json")); len(aside) != 1 || err != nil || strings.Contains(string(b), "\"volume\": 3") {
		t.Fatalf("the corrupt file is not set aside (%v), or still in place: %q, %v", aside, b, err)
	}
}

// dispatcher returns a registry and dispatcher with the device's services,
// as the host has them.
func dispatcher(t *testing.T, d *device.Device) *services.Dispatcher {
	t.Helper()
	reg := services.NewRegistry(services.RegistryOptions{})
	if err := reg.Put(d); err != nil {
		t.Fatalf("the registry refuses the device's services: %v", err)
	}
	return services.NewDispatcher(reg, services.DispatchOptions{})
}

func call(disp *services.Dispatcher, caller services.Caller, method, params string) (out struct {
	Success bool
	Data    map[string]any
	Error   string
}) {
	o := disp.Dispatch(services.WithCaller(context.Background(), caller), voiceCall(method, params))
	out.Success, out.Error = o.Success, o.Error
	json.Unmarshal(o.Data, &out.Data)
	return out
}

// TestOnlyTheOwnerUnmutesTheMicrophone: the voice server and MCP clients
// may mute the microphone but not unmute it, and are told why in words a
// model can relay; the owner can. Each change is a mute event.
func TestOnlyTheOwnerUnmutesTheMicrophone(t *testing.T) {
	ev := &events{}
	d := newDevice(t, device.Options{Hook: ev.hook})
	disp := dispatcher(t, d)
	if out := call(disp, services.CallerVoiceServer, "mute_microphone", `{}`); !out.Success || !d.MicMuted() {
		t.Fatalf("the voice server mutes: %+v", out)
	}
	for _, c := range []services.Caller{services.CallerVoiceServer, services.CallerMCP, services.CallerUnknown} {
		out := call(disp, c, "unmute_microphone", `{}`)
		if out.Success || !strings.Contains(out.Error, "only the speaker's owner can turn it back on") || !strings.Contains(out.Error, "agenthost mic on") {
			t.Errorf("%s unmutes: %+v", c, out)
		}
		if !d.MicMuted() {
			t.Fatalf("%s turned the microphone on", c)
		}
	}
	if out := call(disp, services.CallerOwner, "unmute_microphone", `{}`); !out.Success || d.MicMuted() {
		t.Fatalf("the owner unmutes: %+v", out)
	}
	want := "mute DEVICE=microphone MUTED=true BY=the voice server\nmute DEVICE=microphone MUTED=false BY=the owner"
	if got := ev.all(); got != want {
		t.Errorf("hooks:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range d.Services() {
		if s.Name == "unmute_microphone" && !strings.Contains(s.Description, "Only the speaker's owner") {
			t.Errorf("the description does not say who may unmute: %q", s.Description)
		}
	}
}

var callSeq int

func voiceCall(method, params string) voice.Call {
	callSeq++
	return voice.Call{CallID: "c" + strconv.Itoa(callSeq), Method: method, Params: json.RawMessage(params)}
}

// fakeMixer records the levels set on it. A fake: the mixer itself is
// tested against a real ALSA control in audio/hwvolume.
type fakeMixer struct {
	mu     sync.Mutex
	levels []int
}

func (m *fakeMixer) SetVolume(level int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.levels = append(m.levels, level)
	return nil
}
func (m *fakeMixer) String() string { return "fake/Master" }
func (m *fakeMixer) Close() error   { return nil }

// TestAMixerTakesTheVolume: with audio.mixer the volume goes to the card's
// control and the gain stage only mutes.
func TestAMixerTakesTheVolume(t *testing.T) {
	m := &fakeMixer{}
	d := newDevice(t, device.Options{Volume: 40, Mixer: m})
	d.SetVolume(65, false)
	if d.Gain() != 1 {
		t.Fatalf("gain %g with a mixer", d.Gain())
	}
	d.MuteSpeaker(true)
	if d.Gain() != 0 {
		t.Fatalf("gain %g muted", d.Gain())
	}
	if got := fmt.Sprint(m.levels); got != "[40 65 65]" {
		t.Fatalf("levels set %s", got)
	}
	if st := d.Status(); st.Mixer != "fake/Master" {
		t.Fatalf("status mixer %q", st.Mixer)
	}
}

// TestABadStateFileMutesTheMicrophone: a state file that cannot be read is
// set aside, and the microphone starts muted (the privacy mute fails
// closed), said at WARN with the way back and in the status, and still muted
// after another restart, until the owner turns it on.
func TestABadStateFileMutesTheMicrophone(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "state.json"), []byte("{\"microphone_muted\": tr"), 0o600)
	var log strings.Builder
	d := newDevice(t, device.Options{StateDir: dir, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if !d.MicMuted() {
		t.Fatal("a state file that cannot be read leaves the microphone on")
	}
	warn := ""
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "microphone") {
			warn = line
		}
	}
	if !strings.Contains(warn, "agenthost mic on") || !strings.Contains(warn, "set aside as") {
		t.Errorf("no warning with the way back; log:\n%s", log.String())
	}
	st := d.Status()
	if !st.MicrophoneMuted || !strings.Contains(strings.Join(st.Warnings, "\n"), "agenthost mic on") {
		t.Errorf("status: microphone muted %v, warnings %q", st.MicrophoneMuted, st.Warnings)
	}
	d2 := newDevice(t, device.Options{StateDir: dir})
	if !d2.MicMuted() {
		t.Fatal("the next restart turned the microphone on again")
	}
	if err := d2.SetMicMuted(services.CallerOwner, false); err != nil {
		t.Fatal(err)
	}
	if d3 := newDevice(t, device.Options{StateDir: dir}); d3.MicMuted() || len(d3.Warnings()) != 0 {
		t.Fatalf("after the owner's unmute: muted %v, warnings %q", d3.MicMuted(), d3.Warnings())
	}
}

// TestAStateFieldThisVersionDoesNotKnowIsIgnored: a state file written by
// a later version (a field this one does not know, as after a downgrade)
// is read for what this version knows, not set aside.
func TestAStateFieldThisVersionDoesNotKnowIsIgnored(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"version": 2, "volume": 35, "speaker_muted": true,
		"microphone_muted": true, "microphone_led": "red"}`), 0o600)
	d := newDevice(t, device.Options{StateDir: dir})
	if v, muted := d.Volume(); v != 35 || !muted || !d.MicMuted() || len(d.Warnings()) != 0 {
		t.Fatalf("volume %d, speaker muted %v, microphone muted %v, warnings %q", v, muted, d.MicMuted(), d.Warnings())
	}
}

// TestAStateFileThatDoesNotSayTheMuteStartsMuted: a state file that reads
// but whose mute cannot be trusted (a volume outside 0–100 beside a
// muted microphone; a document without the microphone's mute, which every
// version writes: `null`, or a later version's that keeps it elsewhere)
// starts the microphone muted; one that does not say it says so with the
// way back.
func TestAStateFileThatDoesNotSayTheMuteStartsMuted(t *testing.T) {
	for name, doc := range map[string]string{
		"a volume outside 0–100": `{"version": 1, "volume": 150, "speaker_muted": false, "microphone_muted": true}`,
		"null":                   `null`,
		"no microphone field":    `{"version": 2, "volume": 35, "speaker_muted": false, "microphone": {"muted": true}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			d := newDevice(t, device.Options{StateDir: dir})
			if !d.MicMuted() {
				t.Fatalf("the state file %s turned the microphone on", doc)
			}
			if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(doc, "microphone_muted") && !strings.Contains(w, "agenthost mic on") {
				t.Errorf("warnings %q do not name the way back", w)
			}
		})
	}
}

// TestAStateFileSetAsideWithNoSuccessorStartsMuted: a state file set aside
// whose muted successor could not be written (a full disk) leaves the
// folder with no state file and the set-aside one beside it: the next
// start keeps the microphone muted, as the start that set it aside did.
func TestAStateFileSetAsideWithNoSuccessorStartsMuted(t *testing.T) {
	dir := t.TempDir()
	aside := filepath.Join(dir, "state.json.corrupt-20261126T073000Z")
	if err := os.WriteFile(aside, []byte(`{"microphone_muted": tr`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDevice(t, device.Options{StateDir: dir})
	if !d.MicMuted() {
		t.Fatal("with only a set-aside state file, the microphone starts on")
	}
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, "agenthost mic on") || !strings.Contains(w, aside) {
		t.Errorf("warnings %q do not name the set-aside file and the way back", w)
	}
	if err := d.SetMicMuted(services.CallerOwner, false); err != nil {
		t.Fatal(err)
	}
	if d2 := newDevice(t, device.Options{StateDir: dir}); d2.MicMuted() {
		t.Fatal("after the owner's unmute, the next start mutes again")
	}
}

// TestVolumeRampsAStereoSpeakerOverAFrameWithItsChannelsTogether: at
// 48 kHz stereo a change of volume ramps over a frame of audio (60 ms, 2880
// sample frames), the left and right samples of each frame at one gain.
func TestVolumeRampsAStereoSpeakerOverAFrameWithItsChannelsTogether(t *testing.T) {
	const frames = 2880 // 60 ms at 48 kHz
	d := newDevice(t, device.Options{Volume: 100, Rate: 16000, Frame: 60 * time.Millisecond})
	rec := &recSink{}
	sink := d.SinkFormat(rec, audio.Format{Rate: 48000, Channels: 2})
	if _, err := d.SetVolume(40, false); err != nil {
		t.Fatal(err)
	}
	sink.Write(constant(2*2*frames, 20000))
	got := rec.got
	want := int16(math.Round(20000 * device.Curve(40, device.DefaultRange)))
	for f := range 2 * frames {
		l, r := got[2*f], got[2*f+1]
		if l != r {
			t.Fatalf("frame %d: left %d, right %d: the channels lost their balance", f, l, r)
		}
		if ramping := l != want; ramping != (f < frames-1) {
			t.Fatalf("frame %d is %d (%d after the ramp): the ramp is not one frame of audio long", f, l, want)
		}
	}
}
