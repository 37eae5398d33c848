package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/audio/wakeword/ort"
	"github.com/agenthost/agenthost/audio/wakeword/wakewordtest"
	"github.com/agenthost/agenthost/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// detect runs cmd (the detector), feeds it a spoken "hey jarvis" and
// returns its ready line and the models that fired.
func detect(t *testing.T, cmd *exec.Cmd) (wakeword.Message, []string) {
	t.Helper()
	words := audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis")
	return detectPCM(t, cmd, append(append(make([]int16, 3*wakeword.Rate), words...), make([]int16, 2*wakeword.Rate)...))
}

// detectPCM runs cmd (the detector), feeds it pcm and returns its ready
// line and the models that fired.
func detectPCM(t *testing.T, cmd *exec.Cmd, pcm []int16) (wakeword.Message, []string) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(out)
	next := func() wakeword.Message {
		if !lines.Scan() {
			t.Fatalf("the detector said nothing more; stderr (%d lines):\n%.2000s", strings.Count(stderr.String(), "\n"), stderr.String())
		}
		var m wakeword.Message
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("not the protocol: %q", lines.Text())
		}
		return m
	}
	ready := next()
	if ready.Type != wakeword.KindReady {
		t.Fatalf("first line %+v; stderr:\n%.2000s", ready, stderr.String())
	}
	go func() {
		var buf []byte
		for i := 0; i < len(pcm); i += 960 {
			buf, _ = wakeword.WriteChunk(in, int64(i), pcm[i:min(i+960, len(pcm))], wakeword.Heard{}, buf)
		}
		wakeword.WritePing(in)
	}()
	var fired []string
	for {
		m := next()
		if m.Type == wakeword.KindPong {
			break
		}
		fired = append(fired, m.Model)
	}
	in.Close()
	io.Copy(io.Discard, out)
	return ready, fired
}

// TestDetectorOnBothONNXRuntimes: the detector (binding onnxruntime_go
// v1.13.0, C API 20) runs with both sources of ONNX Runtime: the npm
// package's 1.30 (bookworm, fetched) and Debian trixie's libonnxruntime1.21
// (found where Debian puts it, in a trixie root), and hears the phrase on
// each.
func TestDetectorOnBothONNXRuntimes(t *testing.T) {
	f := wakewordtest.Fetch(t)
	bin := testbin.Build(t, "./cmd/agenthost-wakeword")
	check := func(t *testing.T, ready wakeword.Message, fired []string, want string) {
		t.Logf("ONNX Runtime %s (%s): fired %v", ready.ONNXRuntime, ready.Library, fired)
		if !strings.HasPrefix(ready.ONNXRuntime, want) || len(fired) != 1 || fired[0] != "hey_jarvis" {
			t.Fatalf("ready %+v, fired %v", ready, fired)
		}
		minor, _ := strconv.Atoi(strings.Split(ready.ONNXRuntime, ".")[1])
		if minor < ort.APIVersion {
			t.Fatalf("ONNX Runtime %s is older than the C API %d the binding asks for", ready.ONNXRuntime, ort.APIVersion)
		}
	}
	t.Run("npm-1.30", func(t *testing.T) {
		ready, fired := detect(t, exec.Command(bin, "--dir", f.Dir, "--onnxruntime", f.ONNXRuntime, "hey_jarvis"))
		check(t, ready, fired, "1.30.")
	})
	t.Run("debian-trixie-1.21", func(t *testing.T) {
		root := trixieRoot(t)
		dst := filepath.Join(root, "opt", "agenthost-test")
		os.RemoveAll(dst)
		if err := os.MkdirAll(filepath.Join(dst, "ww"), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", bin, f.Models, dst+"/").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		os.Rename(filepath.Join(dst, "models"), filepath.Join(dst, "ww", "models"))
		ready, fired := detect(t, exec.Command("chroot", root, "/opt/agenthost-test/agenthost-wakeword", "--dir", "/opt/agenthost-test/ww", "hey_jarvis"))
		check(t, ready, fired, "1.21.")
	})
}

// trixieRoot is a Debian 13 root with libonnxruntime1.21, made once with
// mmdebstrap into the cache (as root only: chroot needs it).
func trixieRoot(t *testing.T) string {
	if os.Getuid() != 0 {
		t.Skip("chroot into a Debian trixie root needs root")
	}
	root := os.Getenv("AGENTHOST_TRIXIE_ORT_ROOT")
	if root == "" {
		base, _ := os.UserCacheDir()
		root = filepath.Join(base, "agenthost", "roots", "wake-trixie-amd64")
	}
	if _, err := os.Stat(filepath.Join(root, "usr/lib/x86_64-linux-gnu/libonnxruntime.so.1.21")); err == nil {
		return root
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("no trixie root and no mmdebstrap to make one (apt-get install mmdebstrap)")
	}
	mirror := os.Getenv("MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	// On a new machine the cache folder may not be there yet; a root counts
	// only once it is whole (made in root.tmp, then renamed).
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		t.Fatal(err)
	}
	tar, tmp := root+".tar", root+".tmp"
	t0 := time.Now()
	if out, err := exec.Command("mmdebstrap", "--variant=apt", "--include=libonnxruntime1.21", "trixie", tar, "deb "+mirror+" trixie main").CombinedOutput(); err != nil {
		t.Fatalf("mmdebstrap: %v\n%s", err, out)
	}
	defer os.Remove(tar)
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "xf", tar, "-C", tmp).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		t.Fatal(err)
	}
	t.Logf("made the trixie root %s in %s", root, time.Since(t0).Round(time.Second))
	return root
}

// TestAStepOrRunOutOfRangeIsAClearError: --step, --over and --point outside what the
// detector can do end it with an error line that names them, before any
// library is loaded.
func TestAStepOrRunOutOfRangeIsAClearError(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--step", "30ms", "hey_jarvis"}, "--step: step 480 samples"},
		{[]string{"--step", "0s", "hey_jarvis"}, "--step: step 0 samples"},
		{[]string{"--over", "0", "hey_jarvis"}, "--over 0 is outside 1…10"},
		{[]string{"--over", "11", "hey_jarvis"}, "--over 11 is outside 1…10"},
		{[]string{"--point", "alexa=0.9,2", "hey_jarvis"}, "--point alexa=0.9,2: alexa is not one of the models"},
		{[]string{"--point", "hey_jarvis=1.5,2", "hey_jarvis"}, "--point hey_jarvis=1.5,2: threshold 1.5 is outside (0, 1)"},
		{[]string{"--point", "hey_jarvis=0.9,0", "hey_jarvis"}, "--point hey_jarvis=0.9,0: 0 in a row is outside 1…10"},
		{[]string{"--point", "hey_jarvis", "hey_jarvis"}, "--point hey_jarvis: give MODEL=THRESHOLD,OVER"},
	} {
		var out strings.Builder
		if code := run(c.args, strings.NewReader(""), &out); code != 1 {
			t.Errorf("%v: exit %d, want 1", c.args, code)
		}
		var m wakeword.Message
		if err := json.Unmarshal([]byte(out.String()), &m); err != nil || m.Type != wakeword.KindError || !strings.Contains(m.Error, c.want) {
			t.Errorf("%v: %q, want an error line with %q", c.args, out.String(), c.want)
		}
	}
}
