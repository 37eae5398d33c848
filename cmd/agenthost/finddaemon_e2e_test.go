package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// cliEnv is this process's environment without AGENTHOST_ variables, and
// with the runtime folder (where the default control socket is) at run.
func cliEnv(run string, more ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTHOST_") && !strings.HasPrefix(kv, "RUNTIME_DIRECTORY=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "RUNTIME_DIRECTORY="+run), more...)
}

// TestTheCLIFindsItsDaemon (issue 43, item 3): the CLI takes the daemon's
// file from the installed path, then AGENTHOST_CONFIG, then --config; a
// daemon started with --config FILE answers the CLI given FILE either way.
// When nothing answers, the CLI names the file and the socket it tried and
// says how to point it elsewhere.
func TestTheCLIFindsItsDaemon(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, nil)
	ready(t, sim, 1)
	bin := testbinHost(t)
	empty := t.TempDir() // a runtime folder no daemon uses
	cli := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		what string
		env  []string
		args []string
	}{
		{"--config", cliEnv(empty), []string{"status", "--config", f.path}},
		{"AGENTHOST_CONFIG", cliEnv(empty, "AGENTHOST_CONFIG="+f.path), []string{"status"}},
		{"--config over AGENTHOST_CONFIG", cliEnv(empty, "AGENTHOST_CONFIG=/nonexistent/agenthost.yaml"), []string{"status", "--config", f.path}},
	} {
		if out, err := cli(c.env, c.args...); err != nil {
			t.Errorf("%s: the daemon was not found: %v\n%s", c.what, err, out)
		}
	}

	other := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(other, []byte("log: {level: info}\n"), 0o600)
	socket := filepath.Join(empty, "control.sock")
	for _, c := range []struct {
		what string
		env  []string
		args []string
		file string // the config named
	}{
		{"the installed path", cliEnv(empty), []string{"say", "hello"}, config.DefaultPath},
		{"AGENTHOST_CONFIG", cliEnv(empty, "AGENTHOST_CONFIG="+other), []string{"say", "hello"}, other + " (from AGENTHOST_CONFIG)"},
		{"--config", cliEnv(empty), []string{"status", "--config", other}, other + " (from --config)"},
	} {
		out, err := cli(c.env, c.args...)
		if err == nil {
			t.Errorf("%s: a daemon answered: %s", c.what, out)
			continue
		}
		for _, want := range []string{socket, c.file, "--config FILE", "AGENTHOST_CONFIG=FILE"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the message lacks %q:\n%s", c.what, want, out)
			}
		}
	}
}

// TestCallWithoutADaemonSaysItRunsStandalone (issue 43, item 3): `call`
// with no daemon runs the service in its own process, and says so, with
// the file it took its plugins and MCP servers from.
func TestCallWithoutADaemonSaysItRunsStandalone(t *testing.T) {
	t.Parallel()
	bin := testbinHost(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "my.yaml")
	os.WriteFile(file, []byte("plugins: {dirs: ["+filepath.Join(dir, "plugins")+"], state_dir: "+filepath.Join(dir, "state")+"}\n"), 0o600)
	run := t.TempDir()
	say := "no agenthost daemon answers at " + filepath.Join(run, "control.sock") + ": running get_current_time standalone, on " + file + " (from --config)"
	cmd := exec.Command(bin, "call", "get_current_time", "--config", file)
	cmd.Env = cliEnv(run)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), say) {
		t.Errorf("call: %v; want %q:\n%s", err, say, out)
	}
	cmd = exec.Command(bin, "call", "get_system_info", "--config", file)
	cmd.Env = cliEnv(run)
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown service "get_system_info"`) || !strings.Contains(string(out), "standalone, on "+file) {
		t.Errorf("call of a service no provider of the file offers: %v:\n%s", err, out)
	}
}
