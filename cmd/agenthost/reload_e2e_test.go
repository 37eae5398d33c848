package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// fileHost is a host whose whole configuration is in its file (no --set),
// so that edits of the file, and reloads, decide everything.
type fileHost struct {
	*hostProc
	path string // the file named by --config
	real string // the file written: path, or the target of the symlink at path
	conf map[string]any
}

// fileHostOptions vary startFileHostWith.
type fileHostOptions struct {
	// install fills the plugin folder before the host starts.
	install func(dir string)
	// hidden makes the config file a symbolic link, alone in its folder, to
	// a file in another folder: the watcher (which watches the link's
	// folder) does not see its edits, so only SIGHUP applies them.
	hidden bool
}

// startFileHost writes base settings merged with conf into the host's file
// and starts it with nothing else.
func startFileHost(t *testing.T, sim *voicetest.Server, conf map[string]any) *fileHost {
	t.Helper()
	return startFileHostWith(t, sim, conf, fileHostOptions{})
}

// startFileHostWith is startFileHost with options.
func startFileHostWith(t *testing.T, sim *voicetest.Server, conf map[string]any, o fileHostOptions) *fileHost {
	t.Helper()
	dir := t.TempDir()
	base := map[string]any{
		"server": map[string]any{"address": sim.Addr(), "reconnect": map[string]any{"base": "20ms", "cap": "100ms"}},
		"log":    map[string]any{"level": "info"},
		"plugins": map[string]any{"runtime_dir": filepath.Join(dir, "run"), "dirs": []any{filepath.Join(dir, "plugins")},
			"state_dir": filepath.Join(dir, "state")},
		"audio":        map[string]any{"backend": "none"},
		"conversation": map[string]any{"push_to_talk_key": false},
	}
	os.Mkdir(filepath.Join(dir, "plugins"), 0o755)
	if o.install != nil {
		o.install(filepath.Join(dir, "plugins"))
	}
	f := &fileHost{path: filepath.Join(dir, "agenthost.yaml"), conf: merge(base, conf)}
	f.real = f.path
	if o.hidden {
		f.path, f.real = filepath.Join(t.TempDir(), "agenthost.yaml"), filepath.Join(t.TempDir(), "agenthost.yaml")
	}
	f.write(t)
	if o.hidden {
		if err := os.Symlink(f.real, f.path); err != nil {
			t.Fatal(err)
		}
	}
	bin := testbinHost(t)
	f.hostProc = startHostArgs(t, bin, []string{"run", "--config", f.path}, dir)
	return f
}

// edit merges change into the file's settings and writes it.
func (f *fileHost) edit(t *testing.T, change map[string]any) {
	t.Helper()
	f.conf = merge(f.conf, change)
	f.write(t)
}

func (f *fileHost) write(t *testing.T) {
	t.Helper()
	b, err := yaml.Marshal(f.conf)
	if err != nil {
		t.Fatal(err)
	}
	tmp := f.real + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.real); err != nil {
		t.Fatal(err)
	}
}

// merge returns a with b's keys put in, recursively.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if sub, ok := v.(map[string]any); ok {
			if cur, ok := out[k].(map[string]any); ok {
				out[k] = merge(cur, sub)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func TestReloadLogLevel(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, nil)
	ready(t, sim, 1)
	call(t, sim, "get_current_time", `{}`)
	if strings.Contains(f.log.String(), "level=DEBUG") {
		t.Fatal("debug lines at level info")
	}
	f.edit(t, map[string]any{"log": map[string]any{"level": "debug"}})
	f.logShows("configuration reloaded")
	call(t, sim, "get_current_time", `{}`)
	f.logLine("level=DEBUG", "call answered")
}

func TestReloadPluginConfig(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{"services": map[string]any{"builtins": false},
		"plugins": map[string]any{"config": map[string]any{"clock": map[string]any{"timezone": "UTC"}}}})
	copyExec(t, bundled(t, "clock"), filepath.Join(f.dir, "plugins", "clock"))
	waitFor(t, sim, "the clock", func() bool { _, ok := sim.Services()["get_current_time"]; return ok })
	if out := call(t, sim, "get_current_time", `{"format":"detailed"}`); !strings.Contains(string(out.Data), "UTC") {
		t.Fatalf("%+v", out)
	}
	f.edit(t, map[string]any{"plugins": map[string]any{"config": map[string]any{"clock": map[string]any{"timezone": "Asia/Tokyo"}}}})
	f.logShows("configuration reloaded")
	if out := call(t, sim, "get_current_time", `{"format":"detailed"}`); !strings.Contains(string(out.Data), "JST") {
		t.Fatalf("after the reload: %+v", out)
	}
}

func TestReloadDeadlines(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{"services": map[string]any{"timeouts": map[string]any{"testkit_slow": "5s"}}})
	ready(t, sim, 1)
	if out := call(t, sim, "testkit_slow", `{"ms":300}`); !out.Success {
		t.Fatalf("%+v", out)
	}
	f.edit(t, map[string]any{"services": map[string]any{"timeouts": map[string]any{"testkit_slow": "100ms"}}})
	f.logShows("configuration reloaded")
	if out := call(t, sim, "testkit_slow", `{"ms":300}`); out.Success || !strings.Contains(out.Error, "did not answer within 100ms") {
		t.Fatalf("after the reload: %+v", out)
	}
}

func TestReloadHooks(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, nil)
	ready(t, sim, 1)
	marker := filepath.Join(t.TempDir(), "hook")
	f.edit(t, map[string]any{"conversation": map[string]any{"hooks": map[string]any{"text": "touch " + marker}}})
	f.logShows("configuration reloaded")
	if _, err := sim.Say("hello"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook added by the reload never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReloadAudioDevices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	constant := func(name string, v int16) string {
		p := filepath.Join(dir, name)
		b := make([]byte, 2*16000)
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], uint16(v))
		}
		os.WriteFile(p, b, 0o644)
		return p
	}
	a, b := constant("a.raw", 1000), constant("b.raw", 2000)
	sim := newSim(t, voicetest.Options{Faults: voicetest.Faults{WithholdReplies: true}})
	f := startFileHost(t, sim, map[string]any{"audio": map[string]any{"backend": "file", "input_file": a}})
	ready(t, sim, 1)
	out, err := f.cli("talk", "start")
	if err != nil {
		t.Fatalf("talk start: %v %s", err, out)
	}
	task := strings.TrimSpace(out[strings.LastIndex(out, " ")+1:])
	sample := func(v int16) []byte {
		s := make([]byte, 2)
		binary.LittleEndian.PutUint16(s, uint16(v))
		return bytes.Repeat(s, 8)
	}
	waitFor(t, sim, "audio from the first file", func() bool { return bytes.Contains(sim.Audio(task), sample(1000)) })
	f.edit(t, map[string]any{"audio": map[string]any{"input_file": b}})
	f.logShows("configuration reloaded")
	waitFor(t, sim, "audio from the new file", func() bool {
		cur := sim.Audio(task)
		// A new turn may have started on the reopened device: any task counts.
		return bytes.Contains(cur, sample(2000)) || anyAudio(sim, sample(2000))
	})
}

func anyAudio(sim *voicetest.Server, b []byte) bool {
	for _, r := range sim.Received() {
		if bytes.Contains(r.Frame.Payload, b) {
			return true
		}
	}
	return false
}

func TestReloadServerReconnectsOnceOnSIGHUP(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{DisconnectDelay: 10 * time.Millisecond})
	f := startFileHost(t, sim, map[string]any{"server": map[string]any{"params": map[string]any{"voiceid": "first"}}})
	ready(t, sim, 1)
	f.conf = merge(f.conf, map[string]any{"server": map[string]any{"params": map[string]any{"voiceid": "second"}}})
	f.conf["log"] = map[string]any{"level": "info"}
	b, _ := yaml.Marshal(f.conf)
	os.WriteFile(f.path, b, 0o600) // in place; the watcher may see it too, SIGHUP surely does
	f.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, sim, "a connection with the new voice", func() bool {
		auths := sim.Auths()
		if len(auths) < 2 {
			return false
		}
		v, _ := auths[len(auths)-1].Get("voiceid")
		return v == "second"
	})
	f.logShows("reconnecting with the new server settings")
	time.Sleep(500 * time.Millisecond) // a second reconnect would show by now
	if n := sim.Connections(); n != 2 {
		t.Fatalf("%d connections, want 2 (one reconnect)", n)
	}
	if err := f.stop(); err != nil {
		t.Fatalf("the host did not survive SIGHUP: %v", err)
	}
}

func TestReloadSaysWhatNeedsARestart(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, nil)
	ready(t, sim, 1)
	f.edit(t, map[string]any{"plugins": map[string]any{"debounce": "1s"}, "log": map[string]any{"format": "text"}})
	f.logLine("level=WARN", "apply only after a restart", "plugins.debounce")
}

func TestReloadRefusesAnInvalidEdit(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{"services": map[string]any{"timeouts": map[string]any{"testkit_slow": "5s"}}})
	ready(t, sim, 1)
	good, _ := os.ReadFile(f.path)
	bad := strings.Replace(string(good), "timeouts:", "timeuots:", 1)
	os.WriteFile(f.path, []byte(bad), 0o600)
	line := f.logLine("level=ERROR", "the configuration was not reloaded")
	if !strings.Contains(line, f.path+":") || !strings.Contains(line, "did you mean") {
		t.Fatalf("the refusal does not say where and what: %s", line)
	}
	if out := call(t, sim, "testkit_slow", `{"ms":300}`); !out.Success {
		t.Fatalf("the running configuration did not stay: %+v", out)
	}
}

// TestReloadMixPolicyOnSIGHUP: systemctl reload (SIGHUP) applies audio.mix
// at once: the reload names it applied, and the mixer takes the new policy.
func TestReloadMixPolicyOnSIGHUP(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHostWith(t, sim, nil, fileHostOptions{hidden: true}) // only SIGHUP applies an edit
	ready(t, sim, 1)
	f.edit(t, map[string]any{"audio": map[string]any{"mix": map[string]any{"media_while_active": "pause", "duck_db": -30}}})
	f.cmd.Process.Signal(syscall.SIGHUP)
	f.logLine("configuration reloaded", "audio.mix.duck_db, audio.mix.media_while_active")
	f.logLine("mixer policy changed", "-30", "pause")
}
