package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestEnrollWritesTheOwnersVerifierInTheStateFolder: `agenthost wakeword
// enroll` with recordings (espeak-ng's own WAV files at 22,050 Hz: five
// takes of "hey jarvis" and the prompts) trains the verifier of the
// configured model and writes it in the state folder's wakeword/, readable
// by the owner only, where the detector finds it; recordings that cannot
// serve (too few takes, a missing file) end it with a clear error and
// write nothing. Run as root (`sudo agenthost wakeword enroll`) on a state
// folder the service user owns, the detector runs as that user (see
// TestRootEnrollWritesThroughNoLinkOfTheServiceUser), whose the verifier
// then is: they could not read a root-owned 0600 file. A reload takes a verifier
// written or deleted while the daemon runs.
func TestEnrollWritesTheOwnersVerifierInTheStateFolder(t *testing.T) {
	bin := testbinHost(t)
	dir := t.TempDir()
	sets := wakeSets(t, "/dev/null")
	asRoot := os.Geteuid() == 0
	if asRoot {
		// The detector runs as the state folder's owner, who must reach
		// it and read the wake word's files: a tree every user may enter.
		_, dir = rootTree(t)
		wakeFolder(t, filepath.Join(dir, "wake"), 0, true)
		sets = append(sets, "conversation.wake_word.dir="+filepath.Join(dir, "wake"),
			"conversation.wake_word.onnxruntime="+filepath.Join(dir, "wake", "onnxruntime", "libonnxruntime.so.1"))
	}
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "none.yaml")
	os.WriteFile(cfg, []byte("# defaults\n"), 0o600)
	base := []string{"wakeword", "enroll", "--config", cfg, "--set", "plugins.state_dir=" + state}
	for _, s := range sets {
		base = append(base, "--set", s)
	}
	wav := func(name string, wpm, pitch int, text string) string {
		p := filepath.Join(dir, name+".wav")
		if out, err := exec.Command("espeak-ng", "-v", "en-gb", "-s", fmt.Sprint(wpm), "-p", fmt.Sprint(pitch), "-w", p, text).CombinedOutput(); err != nil {
			t.Fatalf("espeak-ng: %v: %s", err, out)
		}
		return p
	}
	var phrases, others []string
	for i, sp := range [][2]int{{130, 45}, {175, 65}, {145, 72}, {190, 50}, {160, 35}} {
		phrases = append(phrases, "--phrase", wav(fmt.Sprint("phrase", i), sp[0], sp[1], "hey jarvis"))
	}
	for i, text := range wakeword.EnrollPrompts {
		others = append(others, "--other", wav(fmt.Sprint("other", i), 140+10*(i%4), 40+5*(i%5), text))
	}
	file := wakeword.VerifierFile(filepath.Join(state, "wakeword"), "hey_jarvis")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{append(append([]string(nil), phrases[:4]...), others...), "2 recordings of the phrase"},
		{append(append([]string(nil), phrases...), "--other", filepath.Join(dir, "missing.wav")), "missing.wav"},
		{phrases, "no recording of other speech"},
	} {
		out, err := exec.Command(bin, append(append([]string(nil), base...), bad.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), bad.want) {
			t.Errorf("%q: err %v, output lacks %q:\n%s", bad.args, err, bad.want, out)
		}
		if _, err := os.Stat(file); err == nil {
			t.Fatalf("a verifier was written from recordings that could not serve")
		}
	}
	if asRoot {
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(state, serviceUser, serviceUser); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bin, append(append(append([]string(nil), base...), phrases...), others...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("enroll: %v:\n%s", err, out)
	}
	if asRoot {
		for _, p := range []string{filepath.Dir(file), file} {
			if fi, err := os.Stat(p); err != nil || fi.Sys().(*syscall.Stat_t).Uid != serviceUser || fi.Sys().(*syscall.Stat_t).Gid != serviceUser {
				t.Errorf("%s after enroll as root: %v, want it owned by the state folder's owner (%d)", p, err, serviceUser)
			}
		}
		// The daemon below runs as this test's user, as it would as the
		// folder's owner.
		for _, p := range []string{state, filepath.Dir(file), file} {
			os.Chown(p, 0, 0)
		}
	}
	t.Logf("enroll said:\n%s", out)
	v, err := wakeword.LoadVerifier(file)
	if err != nil || v == nil || v.Model != "hey_jarvis" || v.Phrases != 5 {
		t.Fatalf("the verifier %s: %+v, %v; enroll said:\n%s", file, v, err, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the verifier's mode: %v, %v; want 0600", fi.Mode(), err)
	}
	if !strings.Contains(string(out), file) {
		t.Errorf("enroll did not say where the verifier is:\n%s", out)
	}
	// The daemon on that state folder decides with it.
	d := startHost(t, newSim(t, voicetest.Options{}), append(wakeSets(t, "/dev/zero"), "plugins.state_dir="+state)...)
	d.logShows("wake word on")
	d.logShows("agenthost started")
	if st := d.status(t); !slices.Contains(st.WakeWord.Verified, "hey_jarvis") || st.WakeWord.VerifierError != "" {
		t.Errorf("the daemon's wake word after enrolling: %+v, want hey_jarvis verified", st.WakeWord)
	}
	// Deleting the file goes back to the model alone at the next reload.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	n := d.logCount("wake word on")
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitLogCount(n+1, "wake word on")
	if st := d.status(t); len(st.WakeWord.Verified) != 0 {
		t.Errorf("the daemon's wake word after the verifier was deleted and the daemon reloaded: %+v, want none verified", st.WakeWord)
	}
}
