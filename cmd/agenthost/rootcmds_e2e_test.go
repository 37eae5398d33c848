package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/internal/testbin"
)

// serviceUser stands for the package's agenthost user in the tests of
// commands run as root: the user nobody, whom plugins' code runs as there.
const serviceUser = 65534

// needRoot skips a test of what root does with another user's files.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runs commands as root against a folder of another user (uid 65534): run the tests as root")
	}
}

// rootTree makes a folder for such a test that every user may enter (not
// t.TempDir, which others cannot), and lets every user run the host and the
// detector as built for the tests (testbin's folder is root's own).
func rootTree(t *testing.T) (host, base string) {
	t.Helper()
	host = testbinHost(t)
	testbin.Build(t, "./cmd/agenthost-wakeword")
	if err := os.Chmod(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "agenthost-rootcmds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return host, base
}

// wakeFolder makes dir a wake_word.dir with the fetched models (and, with
// ort, ONNX Runtime) in it, all of it owned by uid.
func wakeFolder(t *testing.T, dir string, uid int, ort bool) {
	t.Helper()
	f := wakewordtest.Fetch(t)
	files := []string{"melspectrogram", "embedding_model", "hey_jarvis"}
	for _, p := range []string{dir, filepath.Join(dir, "models"), filepath.Join(dir, "onnxruntime")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		chown(t, p, uid)
	}
	for _, m := range files {
		copyFile(t, f.Model(m), filepath.Join(dir, "models", filepath.Base(f.Model(m))), uid)
	}
	if ort {
		copyFile(t, f.ONNXRuntime, filepath.Join(dir, "onnxruntime", "libonnxruntime.so.1"), uid)
	}
}

func copyFile(t *testing.T, src, dst string, uid int) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	chown(t, dst, uid)
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// plantLibrary builds, as the service user would, a shared library at
// path whose constructor appends "UID EUID" to marker when it is loaded.
func plantLibrary(t *testing.T, path, marker string, uid int) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "planted.c")
	code := fmt.Sprintf(`#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
	FILE *f = fopen(%q, "a");
	if (f) { fprintf(f, "%%d %%d\n", (int)getuid(), (int)geteuid()); fclose(f); }
}
`, marker)
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", path, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	chown(t, path, uid)
}

// rawTakes writes n raw recordings of text (16 kHz s16le) into dir and
// returns them as flag arguments named flag.
func rawTakes(t *testing.T, dir, flag, text string, n int) []string {
	t.Helper()
	var args []string
	for i := 0; i < n; i++ {
		f, err := os.CreateTemp(dir, flag+"-*.s16")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		p := f.Name()
		pcm := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 130 + 15*i, Pitch: 35 + 8*i}, text)
		if err := audiotest.WriteRaw(p, pcm); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--"+flag, p)
	}
	return args
}

// TestRootRunsNoCodeOfTheServiceUser (issue 41, item 2): `sudo agenthost
// check` and `sudo agenthost wakeword enroll` start the detector, which
// loads ONNX Runtime from wake_word.dir/onnxruntime — on bookworm a folder
// the service user owns (fetch-wakeword writes it as that user). A library
// that user planted there must never run as root: its constructor writes
// who it ran as, and no line of that file may say uid 0.
func TestRootRunsNoCodeOfTheServiceUser(t *testing.T) {
	needRoot(t)
	host, base := rootTree(t)
	wake := filepath.Join(base, "wake")
	wakeFolder(t, wake, serviceUser, false)
	lib := filepath.Join(wake, "onnxruntime", "libonnxruntime.so.1")
	marker := filepath.Join(wake, "ran-as")
	plantLibrary(t, lib, marker, serviceUser)
	state := filepath.Join(base, "state") // root's: only the wake folder is the service user's
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "none.yaml")
	os.WriteFile(cfg, []byte("# defaults\n"), 0o600)
	sets := []string{"--config", cfg, "--set", "audio.backend=file", "--set", "audio.input_file=/dev/null",
		"--set", "conversation.wake_word.models=hey_jarvis", "--set", "conversation.wake_word.dir=" + wake,
		"--set", "plugins.state_dir=" + state}
	if _, err := wakeword.FindONNXRuntime(filepath.Join(base, "none")); err == nil {
		// The system has its own (trixie): name the folder's, as an owner may.
		sets = append(sets, "--set", "conversation.wake_word.onnxruntime="+lib)
	}
	takes := append(rawTakes(t, base, "phrase", "hey jarvis", 5), rawTakes(t, base, "other", "hey Janet", 1)...)
	for _, args := range [][]string{
		append([]string{"check", "--offline"}, sets...),
		append(append([]string{"wakeword", "enroll"}, sets...), takes...),
	} {
		os.Remove(marker)
		out, err := exec.Command(host, args...).CombinedOutput()
		ran, _ := os.ReadFile(marker)
		for _, line := range strings.Split(strings.TrimSpace(string(ran)), "\n") {
			if f := strings.Fields(line); len(f) == 2 && (f[0] == "0" || f[1] == "0") {
				t.Errorf("agenthost %s as root ran the library the service user planted in %s as uid 0 (it wrote %q); the command said (%v): %s", args[0], lib, ran, err, lastLines(string(out), 2))
			}
		}
		t.Logf("agenthost %s: %v; the planted library wrote %q: %s", args[0], err, ran, lastLines(string(out), 2))
	}
	// Files of two users: the detector runs as neither, and says what to do.
	chown(t, state, serviceUser-1)
	os.Remove(marker)
	out, err := exec.Command(host, append([]string{"check", "--offline"}, sets...)...).CombinedOutput()
	// The library must not run, check must fail, and its finding must say
	// what to do: run it as the service user.
	if ran, _ := os.ReadFile(marker); err == nil || len(ran) != 0 || !strings.Contains(string(out), "sudo -u agenthost") {
		t.Errorf("check as root with the wake word's and the verifiers' folders of two users: %v, the library wrote %q; want an error that says what to do (sudo -u agenthost): %s", err, ran, out)
	}
}

// TestRootEnrollWritesThroughNoLinkOfTheServiceUser (issue 41, item 3): as
// root, `wakeword enroll` writes the verifier into the service user's state
// folder. That user put a link to a folder of root's where the verifiers'
// folder goes: nothing may land there.
func TestRootEnrollWritesThroughNoLinkOfTheServiceUser(t *testing.T) {
	needRoot(t)
	host, base := rootTree(t)
	wake := filepath.Join(base, "wake")
	wakeFolder(t, wake, 0, true)
	state := filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	chown(t, state, serviceUser)
	roots := filepath.Join(base, "roots") // a folder only root may write
	if err := os.Mkdir(roots, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(roots, filepath.Join(state, "wakeword")); err != nil {
		t.Fatal(err)
	}
	chown(t, filepath.Join(state, "wakeword"), serviceUser)
	cfg := filepath.Join(base, "none.yaml")
	os.WriteFile(cfg, []byte("# defaults\n"), 0o600)
	args := []string{"wakeword", "enroll", "--config", cfg, "--set", "audio.backend=file", "--set", "audio.input_file=/dev/null",
		"--set", "conversation.wake_word.models=hey_jarvis", "--set", "conversation.wake_word.dir=" + wake,
		"--set", "conversation.wake_word.onnxruntime=" + filepath.Join(wake, "onnxruntime", "libonnxruntime.so.1"),
		"--set", "plugins.state_dir=" + state}
	var others []string
	for _, text := range wakeword.EnrollPrompts {
		others = append(others, rawTakes(t, base, "other", text, 1)...)
	}
	args = append(append(args, rawTakes(t, base, "phrase", "hey jarvis", 5)...), others...)
	out, err := exec.Command(host, args...).CombinedOutput()
	entries, _ := os.ReadDir(roots)
	if len(entries) != 0 {
		t.Errorf("root's enroll wrote through the service user's link into root's folder %s: %v; it said (%v):\n%s", roots, entries, err, out)
	}
	t.Logf("enroll: %v:\n%s", err, out)
}
