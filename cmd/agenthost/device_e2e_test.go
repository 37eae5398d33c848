package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// toneFile writes seconds of a 440 Hz tone as a WAV file, a microphone for
// the file backend.
func toneFile(t *testing.T, path string, seconds float64) string {
	t.Helper()
	s, err := audio.CreateWAVSink(path, 16000)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]int16, int(seconds*16000))
	for i := range p {
		p[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/16000))
	}
	s.Write(p)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// audioFrames counts the AUDIO frames the simulator received.
func audioFrames(sim *voicetest.Server) int {
	n := 0
	for _, r := range sim.Received() {
		if r.Frame.Type == voice.TypeAudio {
			n++
		}
	}
	return n
}

// device reads the daemon's device status.
func (d *hostProc) device(t *testing.T) device.Status {
	t.Helper()
	st := d.status(t)
	if st.Device == nil {
		t.Fatal("agenthost status has no device")
	}
	return *st.Device
}

// waitWithheld waits until the daemon has held back n more microphone
// frames than it had: the microphone was read, and nothing was sent.
func (d *hostProc) waitWithheld(t *testing.T, n int64) {
	t.Helper()
	from := d.device(t).MicFramesWithheld
	deadline := time.Now().Add(30 * time.Second)
	for d.device(t).MicFramesWithheld < from+n {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not hold back %d microphone frames", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMicrophonePrivacy: with the microphone muted no AUDIO frame reaches
// the server, whatever starts the turn (a VAD LISTEN cycle at link-up, a
// restart, push-to-talk); the server's model and an MCP client may mute
// but not unmute, and are told why; `agenthost mic on` does.
func TestMicrophonePrivacy(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{VADHang: time.Hour})
	dir := t.TempDir()
	mic := toneFile(t, filepath.Join(dir, "mic.wav"), 1)
	state := "plugins.state_dir=" + filepath.Join(dir, "state")
	sets := []string{state, "audio.backend=file", "audio.input_file=" + mic, "server.params.mode=vad"}
	d := startHost(t, sim, sets...)
	waitFor(t, sim, "audio from the microphone", func() bool { return audioFrames(sim) >= 5 })

	// The server's model mutes it: allowed.
	if out := call(t, sim, "mute_microphone", `{}`); !out.Success {
		t.Fatalf("mute_microphone: %+v", out)
	}
	d.waitWithheld(t, 20)
	n := audioFrames(sim)
	d.waitWithheld(t, 20)
	if m := audioFrames(sim); m != n {
		t.Fatalf("%d AUDIO frames reached the server while the microphone was muted", m-n)
	}
	// Neither the server's model nor an MCP client can turn it on.
	out := call(t, sim, "unmute_microphone", `{}`)
	if out.Success || !strings.Contains(out.Error, "only the speaker's owner can turn it back on") {
		t.Fatalf("unmute_microphone from the server: %+v", out)
	}
	cs := mcpSession(t, d)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "unmute_microphone", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(mcpText(res), "only the speaker's owner") {
		t.Fatalf("unmute_microphone from an MCP client: %v %+v", err, res)
	}
	if !d.device(t).MicrophoneMuted {
		t.Fatal("the microphone was turned on by a model")
	}
	// A restart keeps it muted: the LISTEN cycle at link-up sends nothing.
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	listens := func() int {
		k := 0
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeListen {
				k++
			}
		}
		return k
	}
	before := listens()
	d = startHost(t, sim, sets...)
	waitFor(t, sim, "a LISTEN start after the restart", func() bool { return listens() > before })
	d.waitWithheld(t, 20)
	if m := audioFrames(sim); m != n {
		t.Fatalf("%d AUDIO frames after the restart with the microphone muted", m-n)
	}
	// The owner turns it on.
	if out, err := d.cli("mic", "on"); err != nil || !strings.Contains(out, "microphone on") {
		t.Fatalf("agenthost mic on: %v %s", err, out)
	}
	waitFor(t, sim, "audio once the owner turned the microphone on", func() bool { return audioFrames(sim) >= n+5 })
	if out, err := d.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v %s", err, out)
	}
	d.stop()

	// Push-to-talk, muted: the turn is refused and nothing is sent.
	n = audioFrames(sim)
	auths := len(sim.Auths())
	ptt := startHost(t, sim, state, "audio.backend=file", "audio.input_file="+mic, "server.params.mode=manual")
	ready(t, sim, auths+1)
	if out, err := ptt.cli("talk", "start"); err == nil || !strings.Contains(out, "muted for privacy") {
		t.Fatalf("talk start with the microphone muted: %v %s", err, out)
	}
	ptt.waitWithheld(t, 20)
	if m := audioFrames(sim); m != n {
		t.Fatalf("%d AUDIO frames from a push-to-talk host with the microphone muted", m-n)
	}
}

// TestADamagedDeviceStateStartsTheMicrophoneMuted: the daemon whose device
// state file cannot be read starts with the microphone muted (nothing is
// sent), says so in its log and status, and the owner turns it on.
func TestADamagedDeviceStateStartsTheMicrophoneMuted(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{VADHang: time.Hour})
	dir := t.TempDir()
	mic := toneFile(t, filepath.Join(dir, "mic.wav"), 1)
	state := filepath.Join(dir, "state")
	os.MkdirAll(filepath.Join(state, "device"), 0o700)
	os.WriteFile(filepath.Join(state, "device", "state.json"), []byte(`{"version":1,"microphone_muted":tr`), 0o600)
	d := startHost(t, sim, "plugins.state_dir="+state, "audio.backend=file", "audio.input_file="+mic, "server.params.mode=vad")
	d.logShows("turn it on with `agenthost mic on`") // said as the device is built, before the control socket listens
	d.logShows("agenthost started")
	d.waitWithheld(t, 20)
	if n := audioFrames(sim); n != 0 {
		t.Fatalf("%d AUDIO frames reached the server after a damaged state file", n)
	}
	if out, err := d.cli("mic"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic: %v %s", err, out)
	}
	if w := strings.Join(d.device(t).Warnings, "\n"); !strings.Contains(w, "set aside as") || !strings.Contains(w, "agenthost mic on") {
		t.Fatalf("status warnings: %q", w)
	}
	if out, err := d.cli("mic", "on"); err != nil || !strings.Contains(out, "microphone on") {
		t.Fatalf("agenthost mic on: %v %s", err, out)
	}
	waitFor(t, sim, "audio once the owner turned the microphone on", func() bool { return audioFrames(sim) >= 5 })
}

// mcpSession connects a go-sdk MCP client to `agenthost mcp`, which
// proxies to the daemon d.
func mcpSession(t *testing.T, d *hostProc) *mcp.ClientSession {
	t.Helper()
	script := mcpCommand(t, d.dir, d.sets)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(script)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// hookLog is a conversation hook that appends each event to a file with
// the time it ran, and reads them back.
type hookLog string

// newHookLog is a hook log in a folder of its own under dir: a hook (under
// Landlock) cannot write in a folder that holds what the daemon hides from
// its children, as the state folder or the configuration.
func newHookLog(t *testing.T, dir string) hookLog {
	t.Helper()
	d := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return hookLog(filepath.Join(d, "hooks.log"))
}

func (h hookLog) set() string {
	return `printf '%s %s %s %s\n' "$(date +%s.%N)" "$AGENTHOST_EVENT" "$AGENTHOST_LABEL" "$AGENTHOST_STATE" >> ` + string(h)
}

type hookLine struct {
	at                  time.Time
	event, label, state string
}

func (h hookLog) lines() []hookLine {
	b, _ := os.ReadFile(string(h))
	var out []hookLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		sec, _ := strconv.ParseFloat(f[0], 64)
		out = append(out, hookLine{time.Unix(0, int64(sec*1e9)), f[1], f[2], f[3]})
	}
	return out
}

func (h hookLog) wait(t *testing.T, label, state string) hookLine {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, l := range h.lines() {
			if l.label == label && l.state == state {
				return l
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(string(h))
			t.Fatalf("no hook event %s %s; the hooks ran:\n%s", label, state, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPlayed waits until `agenthost status` shows that sounds of class
// have played at least secs on the speaker (the output file fills as they
// play).
func (d *hostProc) waitPlayed(class string, secs float64) {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var st struct {
			Output json.RawMessage `json:"output"`
		}
		var o struct {
			Played map[string]float64 `json:"played_s"`
		}
		out, err := d.cli("status")
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && json.Unmarshal(st.Output, &o) == nil && o.Played[class] >= secs {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("sounds of class %s did not play %.1f s on the speaker; the output: %s", class, secs, st.Output)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitMorePlayed waits until sounds of class have played secs more on the
// speaker than they had when it was called.
func (d *hostProc) waitMorePlayed(class string, secs float64) {
	d.t.Helper()
	d.waitPlayed(class, d.played(class)+secs)
}

// played is how long sounds of class have played on the speaker, as
// `agenthost status` says.
func (d *hostProc) played(class string) float64 {
	d.t.Helper()
	var st struct {
		Output struct {
			Played map[string]float64 `json:"played_s"`
		} `json:"output"`
	}
	out, err := d.cli("status")
	if err != nil || json.Unmarshal([]byte(out), &st) != nil {
		d.t.Fatalf("agenthost status: %v\n%s", err, out)
	}
	return st.Output.Played[class]
}

// chimeIn reports whether the WAV file at path holds the ring chime.
func chimeIn(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 44 {
		t.Fatalf("the output file %s: %v", path, err)
	}
	s := audiotest.BytesToSamples(b[44:])
	t.Logf("%s: %d samples, rms %.4f, peak freq %.1f", path, len(s), audiotest.RMS(s), audiotest.PeakFrequency(s[:min(len(s), 4000)], 16000, 200, 2000, 10))
	return toneIn(s, 1174.66)
}

// TestTimerRingsWithTheLinkDown: a real 2 s timer through the file backend
// rings (the chime is in the speaker's file, the timer hook runs no sooner
// than 2 s after it was set) while the server is away; the server is told
// once it is back; `agenthost timers` shows it ringing and `agenthost
// stop` stops it.
func TestTimerRingsWithTheLinkDown(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	dir := t.TempDir()
	hooks := newHookLog(t, dir)
	out := filepath.Join(dir, "speaker.wav")
	d := startHost(t, sim, "plugins.state_dir="+filepath.Join(dir, "state"), "audio.backend=file", "audio.output_file="+out,
		"conversation.hooks.timer="+hooks.set(), "device.ring.timeout=1h", "device.volume=100")
	ready(t, sim, 1)
	set := time.Now()
	if res := call(t, sim, "set_timer", `{"seconds":2,"label":"tea"}`); !res.Success || !strings.Contains(string(res.Data), `"id":"1"`) {
		t.Fatalf("set_timer: %+v", res)
	}
	addr := sim.Addr()
	sim.Close() // the server goes away
	rang := hooks.wait(t, "tea", "ringing")
	if early := set.Add(2 * time.Second).Sub(rang.at); early > 0 {
		t.Fatalf("the timer rang %s early", early)
	}
	if l, err := d.cli("timers"); err != nil || !strings.Contains(l, "RINGING  1 timer tea") {
		t.Fatalf("agenthost timers: %v\n%s", err, l)
	}
	// The server comes back and is told.
	sim2, err := voicetest.NewServer(voicetest.Options{Addr: addr, ReplyDuration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim2.Close() })
	waitFor(t, sim2, "the server told about the timer", func() bool {
		for _, r := range sim2.Received() {
			if r.Frame.Type == voice.TypeText && strings.Contains(string(r.Frame.Payload), `The timer "tea" (2 seconds) has gone off`) {
				return true
			}
		}
		return false
	})
	// The speaker's file fills as the chime plays: let it play a while.
	d.waitPlayed("ring", 0.4)
	if l, err := d.cli("stop"); err != nil || !strings.Contains(l, "stopped 1 ringing") {
		t.Fatalf("agenthost stop: %v %s", err, l)
	}
	hooks.wait(t, "tea", "stopped")
	// What the model reads (list_timers, get_device_status) and the status
	// say it stopped, when, and who stopped it; none says it still rings.
	var list struct{ Recent []device.Event }
	json.Unmarshal(call(t, sim2, "list_timers", `{}`).Data, &list)
	var dev struct{ Recent []device.Event }
	json.Unmarshal(call(t, sim2, "get_device_status", `{}`).Data, &dev)
	for what, recent := range map[string][]device.Event{"list_timers": list.Recent, "get_device_status": dev.Recent, "agenthost status": d.device(t).Recent} {
		if len(recent) != 1 || recent[0].State != "stopped" || recent[0].StoppedBy != "the owner (agenthost stop)" || recent[0].StoppedAt == "" {
			t.Errorf("%s shows the stopped ring as %+v", what, recent)
		}
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if !chimeIn(t, out) {
		t.Fatal("no chime in the speaker's output file")
	}
}

// TestTimersSurviveARestartAndACorruptFile: a timer set just before the
// daemon stops rings after it starts again (and is then gone from the
// state file), and the talk button stops it; a corrupt state file is set aside and reported, and the
// daemon serves timers all the same.
func TestTimersSurviveARestartAndACorruptFile(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	dir := t.TempDir()
	hooks := newHookLog(t, dir)
	stateDir := filepath.Join(dir, "state")
	file := filepath.Join(stateDir, "device", "timers.json")
	sets := func(out string) []string {
		return []string{"plugins.state_dir=" + stateDir, "audio.backend=file", "audio.output_file=" + filepath.Join(dir, out),
			"conversation.hooks.timer=" + hooks.set(), "device.volume=100"}
	}
	d := startHost(t, sim, sets("first.wav")...)
	ready(t, sim, 1)
	if l, err := d.cli("call", "set_timer", `{"seconds":2,"label":"eggs"}`); err != nil {
		t.Fatalf("agenthost call set_timer: %v %s", err, l)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), `"eggs"`) {
		t.Fatalf("the state file after the stop:\n%s", b)
	}
	for _, l := range hooks.lines() {
		t.Fatalf("a hook ran before the restart: %+v", l)
	}
	d = startHost(t, sim, sets("second.wav")...)
	hooks.wait(t, "eggs", "ringing")
	d.waitPlayed("ring", 0.4) // the file fills as the chime plays
	if b, _ := os.ReadFile(file); strings.Contains(string(b), `"eggs"`) {
		t.Fatalf("the timer that rang is still in the state file:\n%s", b)
	}
	// The talk button stops the ringing (and starts no turn).
	if out, err := d.cli("talk", "start"); err != nil || !strings.Contains(out, "stopped the ringing") {
		t.Fatalf("talk start while ringing: %v %s", err, out)
	}
	hooks.wait(t, "eggs", "stopped")
	if out, err := d.cli("talk", "stop"); err != nil || !strings.Contains(out, "stopped the ringing") {
		t.Fatalf("talk stop after the press that stopped the ringing: %v %s", err, out)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if !chimeIn(t, filepath.Join(dir, "second.wav")) {
		t.Fatal("no chime after the restart")
	}

	os.WriteFile(file, []byte(`{"version":1,"entries":[{"id":`), 0o600)
	d = startHost(t, sim, sets("third.wav")...)
	d.logShows("set aside as")
	if w := strings.Join(d.device(t).Warnings, "\n"); !strings.Contains(w, "timers.json.corrupt-") {
		t.Fatalf("the status does not report the corrupt file: %q", w)
	}
	matches, _ := filepath.Glob(file + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("set aside: %v", matches)
	}
	if l, err := d.cli("call", "set_timer", `{"duration":"10m","label":"pasta"}`); err != nil || !strings.Contains(l, `"success": true`) {
		t.Fatalf("a timer after the corrupt file: %v %s", err, l)
	}
	if l, err := d.cli("timers"); err != nil || !strings.Contains(l, `10 minutes timer "pasta"`) {
		t.Fatalf("agenthost timers: %v %s", err, l)
	}
}

// TestVolumeFromTheCLI: `agenthost volume` sets, steps, mutes and shows the
// volume, which the server's model sees too, and it survives a restart.
func TestVolumeFromTheCLI(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	dir := t.TempDir()
	sets := []string{"plugins.state_dir=" + filepath.Join(dir, "state")}
	d := startHost(t, sim, sets...)
	ready(t, sim, 1)
	for _, c := range []struct{ args, want string }{
		{"", "volume 70"}, {"35", "volume 35"}, {"+10", "volume 45"}, {"-50", "volume 0"}, {"60", "volume 60"},
		{"mute", "volume 60 (muted)"},
	} {
		args := []string{"volume"}
		if c.args != "" {
			args = append(args, c.args)
		}
		if out, err := d.cli(args...); err != nil || strings.TrimSpace(out) != c.want {
			t.Fatalf("agenthost volume %s: %v %q, want %q", c.args, err, out, c.want)
		}
	}
	if out, err := d.cli("volume", "101"); err == nil || !strings.Contains(out, "not a number from 0 to 100") {
		t.Fatalf("volume 101: %v %s", err, out)
	}
	res := call(t, sim, "get_device_status", `{}`)
	var st device.Status
	if err := json.Unmarshal(res.Data, &st); err != nil || st.Volume != 60 || !st.SpeakerMuted || st.Link != "up" {
		t.Fatalf("get_device_status: %+v %s", res, res.Data)
	}
	d.stop()
	d = startHost(t, sim, sets...)
	ready(t, sim, 2) // the control socket is up before the register
	if out, err := d.cli("volume"); err != nil || strings.TrimSpace(out) != "volume 60 (muted)" {
		t.Fatalf("after a restart: %v %q", err, out)
	}
}
