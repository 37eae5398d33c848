package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// script is the path of scripts/NAME in this checkout.
func script(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(testbin.ModuleRoot(t), "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// need skips the test when a tool is missing.
func need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
}

// run runs name with args in dir with env added, and returns its stdout,
// failing the test (with stderr) if it fails.
func run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, errOut, err := runErr(dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// runErr runs name with args in dir with env added and returns its stdout,
// stderr and error.
func runErr(dir string, env []string, name string, args ...string) (string, string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
