package audiotest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

const childEnv = "AUDIOTEST_CHILD"

// InChild reports whether this process is the child that RunInChild started
// for test t. A test that needs a process of its own is written as
//
//	func TestX(t *testing.T) {
//		if !audiotest.InChild(t) {
//			conf := ... // prepare files in t.TempDir()
//			audiotest.RunInChild(t, "ALSA_CONFIG_PATH="+conf, "MY_INPUT="+path)
//			return
//		}
//		// The body runs here, in the child, with that environment.
//	}
func InChild(t testing.TB) bool {
	return os.Getenv(childEnv) == t.Name()
}

// RunInChild runs test t again in a child process (the same test binary,
// with -test.run selecting only t) with env (KEY=value entries) added to the
// environment, and fails t with the child's output if the child fails.
// PortAudio and ALSA read their configuration once per process, so this is
// how a test gets an ALSA_CONFIG_PATH of its own.
func RunInChild(t *testing.T, env ...string) {
	t.Helper()
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v=true", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+t.Name()), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process for %s failed: %v\n%s", t.Name(), err, out)
	}
	switch o := string(out); {
	case strings.Contains(o, "--- PASS: "+t.Name()+" "):
	case strings.Contains(o, "--- SKIP: "+t.Name()+" "):
		t.Skipf("skipped in the child process:\n%s", out)
	default:
		t.Fatalf("child process for %s did not run the test:\n%s", t.Name(), out)
	}
	if testing.Verbose() {
		t.Logf("child output:\n%s", out)
	}
}
