package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// eachMechanism runs f once for each mechanism this machine has
// (Landlock, user namespaces through bubblewrap), as a subtest named by it.
func eachMechanism(t *testing.T, f func(t *testing.T, j sandbox.Jail)) {
	for _, m := range []sandbox.Mode{sandbox.Landlock, sandbox.Namespaces} {
		t.Run(string(m), func(t *testing.T) {
			if _, err := sandbox.Mechanism(m); err != nil {
				t.Skip(err)
			}
			f(t, sandbox.Jail{Mode: m})
		})
	}
}

// run starts sh -c script confined by j and p and returns its combined
// output and whether it succeeded.
func run(t *testing.T, j sandbox.Jail, p sandbox.Policy, script string) (string, bool) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := j.Confine(cmd, p); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

func TestAConfinedChildReadsTheSystemButNotTheDaemonsFiles(t *testing.T) {
	eachMechanism(t, func(t *testing.T, j sandbox.Jail) {
		root := t.TempDir()
		state := filepath.Join(root, "state")       // the daemon's: hidden
		own := filepath.Join(state, "plugins", "p") // the child's own, inside it
		models := filepath.Join(state, "models")
		other := filepath.Join(root, "other") // visible, not writable
		for _, d := range []string{own, models, other} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(state, "mute.json"), []byte(`{"muted":true}`), 0o600)
		os.WriteFile(filepath.Join(models, "m.onnx"), []byte("model"), 0o600)
		os.WriteFile(filepath.Join(other, "readme"), []byte("public"), 0o600)
		p := sandbox.Policy{Hide: []string{state}, Read: []string{models}, Write: []string{own}}

		for _, c := range []struct {
			what, script string
			ok           bool
		}{
			{"read the system", "cat /etc/hostname >/dev/null && ls /usr/bin >/dev/null", true},
			{"read a visible file", "cat " + other + "/readme", true},
			{"read the daemon's state", "cat " + state + "/mute.json", false},
			{"list the daemon's state", "ls " + state, false},
			{"write the daemon's state", "echo '{}' > " + state + "/mute.json", false},
			{"remove the daemon's state", "rm " + state + "/mute.json", false},
			{"plant a file in the daemon's state", "echo x > " + state + "/new", false},
			{"write a visible folder", "echo x > " + other + "/x", false},
			{"write /tmp", "echo x > /tmp/agenthost-sandbox-test-$$", false},
			{"read a granted model inside the state", "cat " + models + "/m.onnx", true},
			{"write a granted model folder read-only", "echo x > " + models + "/m.onnx", false},
			{"write its own folder", "echo x > " + own + "/f && mkdir " + own + "/d && rm -r " + own + "/d && cat " + own + "/f", true},
			{"write /dev/null", "echo x > /dev/null", true},
		} {
			out, ok := run(t, j, p, c.script)
			if ok != c.ok {
				t.Errorf("%s: succeeded=%v, want %v (output %q)", c.what, ok, c.ok, out)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(state, "mute.json")); string(b) != `{"muted":true}` {
			t.Errorf("the state file was changed: %q", b)
		}
	})
}

func TestWhatAConfinedChildStartsIsConfinedToo(t *testing.T) {
	eachMechanism(t, func(t *testing.T, j sandbox.Jail) {
		state := t.TempDir()
		os.WriteFile(filepath.Join(state, "token"), []byte("secret"), 0o600)
		// A grandchild that left the session still carries the domain.
		out, ok := run(t, j, sandbox.Policy{Hide: []string{state}}, "setsid sh -c 'cat "+state+"/token' </dev/null")
		if ok || strings.Contains(out, "secret") {
			t.Errorf("a grandchild read the token: ok=%v output %q", ok, out)
		}
	})
}

func TestTheTrampolineKeepsTheProgramsArgumentsAndEnvironment(t *testing.T) {
	eachMechanism(t, func(t *testing.T, j sandbox.Jail) {
		cmd := exec.Command("sh", "-c", `printf '%s|%s|%s' "$0" "$1" "$X"; env | grep -c AGENTHOST_SANDBOX || true`, "zero", "one")
		cmd.Env = []string{"X=ex", "PATH=/usr/bin:/bin"}
		if err := j.Confine(cmd, sandbox.Policy{}); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != "zero|one|ex0" {
			t.Errorf("the program saw %q, want zero|one|ex and no policy variable (0)", got)
		}
	})
}

// TestALinkBesideTheDaemonsFilesDoesNotUncoverThem: a link among the
// folders on the way to a hidden one (as /var/run is to /run, where
// systemd puts the credentials) is not followed when the rest is granted.
func TestALinkBesideTheDaemonsFilesDoesNotUncoverThem(t *testing.T) {
	eachMechanism(t, func(t *testing.T, j sandbox.Jail) {
		root := t.TempDir()
		state := filepath.Join(root, "run", "credentials")
		os.MkdirAll(state, 0o700)
		os.WriteFile(filepath.Join(state, "token"), []byte("secret"), 0o600)
		os.Symlink(root, filepath.Join(root, "alias")) // root/alias -> root
		os.Symlink(filepath.Join(root, "run"), filepath.Join(root, "varrun"))
		for _, p := range []string{"alias/run/credentials/token", "varrun/credentials/token"} {
			if out, ok := run(t, j, sandbox.Policy{Hide: []string{state}}, "cat "+filepath.Join(root, p)); ok || strings.Contains(out, "secret") {
				t.Errorf("read %s: %q", p, out)
			}
		}
	})
}

// TestAConfinedChildCannotUndoItsSandbox: what hides the daemon's files
// stays in place whatever the child tries, as its root too.
func TestAConfinedChildCannotUndoItsSandbox(t *testing.T) {
	eachMechanism(t, func(t *testing.T, j sandbox.Jail) {
		state := t.TempDir()
		os.WriteFile(filepath.Join(state, "token"), []byte("secret"), 0o600)
		// umount(2) itself, not umount(8), which asks for root on its own.
		umount := `python3 -c 'import ctypes,sys; ctypes.CDLL(None).umount2(sys.argv[1].encode(), 2)' `
		for _, script := range []string{
			umount + state + "; cat " + state + "/token",
			"unshare -Urm sh -c \"" + umount + state + "; cat " + state + "/token\"",
			"cat /proc/$PPID/root" + state + "/token", // the trampoline's, or bwrap's, view
			"cat /proc/1/root" + state + "/token",
		} {
			if out, _ := run(t, j, sandbox.Policy{Hide: []string{state}}, script); strings.Contains(out, "secret") {
				t.Errorf("%s: read the token: %q", script, out)
			}
		}
	})
}

// TestAConfinedChildCannotSignalTheDaemon: the test process stands for
// the daemon; its child may not stop or kill it.
func TestAConfinedChildCannotSignalTheDaemon(t *testing.T) {
	eachMechanism(t, func(t *testing.T, j sandbox.Jail) {
		if abi, _ := sandbox.ABI(); j.Mode == sandbox.Landlock && abi < 6 {
			t.Skipf("Landlock ABI %d scopes no signals (6 does): docs/security.md", abi)
		}
		if out, ok := run(t, j, sandbox.Policy{}, "kill -0 "+strconv.Itoa(os.Getpid())); ok {
			t.Errorf("the child may signal the daemon (%q)", out)
		}
	})
}
