package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// checkCase is one thing the daemon's start refuses (fatal: exit 78) or
// warns about, and what both `check` and `run` must say of it (issue 43).
type checkCase struct {
	name    string
	conf    func(dir string) map[string]any // merged into the base file
	sets    func(dir string) []string
	noToken bool // no AGENTHOST_SERVER_TOKEN
	fatal   bool
	want    func(dir string) string
	// runSays, when set, is what run's log says instead of refusing to
	// start: check's error is the daemon's warning (it serves the rest).
	runSays string
}

func checkCases(t *testing.T) []checkCase {
	files := bundled(t, "files")
	return []checkCase{
		{name: "no token", noToken: true,
			want: func(string) string { return "no token is configured" }},
		{name: "missing token_file", noToken: true, fatal: true,
			sets: func(dir string) []string { return []string{"server.token_file=" + filepath.Join(dir, "token")} },
			want: func(dir string) string {
				return "server.token_file: " + filepath.Join(dir, "token") + ": no such file or directory"
			}},
		{name: "missing plugin folder",
			sets: func(dir string) []string { return []string{"plugins.dirs=" + filepath.Join(dir, "no-plugins")} },
			want: func(dir string) string {
				return "plugins.dirs: " + filepath.Join(dir, "no-plugins") + ": no such file or directory"
			}},
		{name: "MCP command not there",
			conf: func(string) map[string]any {
				return map[string]any{"mcp": map[string]any{"servers": map[string]any{"nope": map[string]any{"command": "/nonexistent/mcp-server"}}}}
			},
			want: func(string) string {
				return "mcp server nope: its command /nonexistent/mcp-server: no such file or directory"
			}},
		{name: "plugin option typo", fatal: true, runSays: "it rejected its configuration (plugins.config.files)",
			conf: func(dir string) map[string]any {
				copyExec(t, files, filepath.Join(dir, "plugins", "files"))
				return map[string]any{"plugins": map[string]any{"config": map[string]any{"files": map[string]any{"rooot": dir}}}}
			},
			want: func(dir string) string {
				return "plugins.config.files: the plugin " + filepath.Join(dir, "plugins", "files") + ` rejects it: unknown option "rooot"`
			}},
		{name: "missing audio.input_file", fatal: true,
			sets: func(dir string) []string {
				return []string{"audio.backend=file", "audio.input_file=" + filepath.Join(dir, "mic.wav"), "audio.output_file=" + filepath.Join(dir, "out.wav")}
			},
			want: func(dir string) string {
				return "audio.input_file: " + filepath.Join(dir, "mic.wav") + ": no such file or directory"
			}},
		{name: "missing mcp.servers_file", fatal: true,
			sets: func(dir string) []string { return []string{"mcp.servers_file=" + filepath.Join(dir, "servers.json")} },
			want: func(dir string) string {
				return "mcp.servers_file: " + filepath.Join(dir, "servers.json") + ": no such file or directory"
			}},
		{name: "missing earcon", fatal: true,
			sets: func(dir string) []string {
				return []string{"conversation.earcons.listen_start=" + filepath.Join(dir, "start.wav")}
			},
			want: func(dir string) string {
				return "conversation.earcons.listen_start: " + filepath.Join(dir, "start.wav") + ": no such file or directory"
			}},
		{name: "missing ring sound", fatal: true,
			sets: func(dir string) []string { return []string{"device.ring.sound=" + filepath.Join(dir, "ring.wav")} },
			want: func(dir string) string {
				return "device.ring.sound: " + filepath.Join(dir, "ring.wav") + ": no such file or directory"
			}},
	}
}

// checkSetup writes the case's configuration into a new folder and returns
// the folder, the arguments after the command, and the environment.
func checkSetup(t *testing.T, c checkCase) (dir string, args, env []string) {
	dir = t.TempDir()
	os.Mkdir(filepath.Join(dir, "plugins"), 0o755)
	conf := map[string]any{
		"server":       map[string]any{"address": "127.0.0.1:1", "reconnect": map[string]any{"base": "1s", "cap": "1s"}},
		"audio":        map[string]any{"backend": "none"},
		"conversation": map[string]any{"push_to_talk_key": false},
		"plugins": map[string]any{"runtime_dir": filepath.Join(dir, "run"), "dirs": []any{filepath.Join(dir, "plugins")},
			"state_dir": filepath.Join(dir, "state")},
	}
	if c.conf != nil {
		for k, v := range c.conf(dir) {
			if base, ok := conf[k].(map[string]any); ok {
				for kk, vv := range v.(map[string]any) {
					base[kk] = vv
				}
				continue
			}
			conf[k] = v
		}
	}
	b, _ := json.Marshal(conf) // YAML holds JSON
	file := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args = []string{"--config", file}
	if c.sets != nil {
		for _, s := range c.sets(dir) {
			args = append(args, "--set", s)
		}
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTHOST_") {
			env = append(env, kv)
		}
	}
	if !c.noToken {
		env = append(env, "AGENTHOST_SERVER_TOKEN=check-token")
	}
	return dir, args, env
}

// TestCheckSaysWhatRunSays (issue 43, item 2): for each thing the start
// refuses or warns about, `check --offline` says it too, and a refusal is
// exit 78 (EX_CONFIG) from both, which the unit does not restart.
func TestCheckSaysWhatRunSays(t *testing.T) {
	t.Parallel()
	host := testbinHost(t)
	for _, c := range checkCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir, args, env := checkSetup(t, c)
			want := c.want(dir)

			cmd := exec.Command(host, append([]string{"check", "--offline"}, args...)...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			check := string(out)
			if c.fatal {
				if code := exitCode(err); code != exitConfig || !strings.Contains(check, "error: "+want) {
					t.Errorf("check: exit %d (want %d), output lacks %q:\n%s", code, exitConfig, "error: "+want, check)
				}
			} else if err != nil || !strings.Contains(check, "warning: "+want) || strings.Contains(check, ": OK\n") {
				t.Errorf("check: %v; want a warning %q and no plain OK:\n%s", err, want, check)
			}

			log := &testbin.Buffer{}
			cmd = exec.Command(host, append([]string{"run"}, args...)...)
			cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				cmd.Process.Kill()
				<-exited
				if t.Failed() {
					t.Logf("run's log:\n%s", log)
				}
			}()
			if c.runSays != "" {
				want = c.runSays
			} else if c.fatal {
				select {
				case err := <-exited:
					exited <- err
					if code := exitCode(err); code != exitConfig || !strings.Contains(log.String(), want) {
						t.Errorf("run: exit %d (want %d), output lacks %q", code, exitConfig, want)
					}
					if n := strings.Count(log.String(), want[strings.Index(want, ": ")+2:strings.LastIndex(want, ": ")]); n != 1 {
						t.Errorf("run names the file %d times, want once", n)
					}
				case <-time.After(time.Minute):
					t.Errorf("run did not refuse to start within a minute")
				}
				return
			}
			deadline := time.Now().Add(time.Minute)
			for !strings.Contains(log.String(), want) {
				if time.Now().After(deadline) {
					t.Fatalf("run's log never said %q", want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestCheckSaysTheSandboxCannotConfine: on a kernel without Landlock
// (nolandlock's filter) check says what run's start says: with
// sandbox.mode landlock no child will be started, and how to turn it on;
// with auto (where bubblewrap is) that they run in user namespaces.
func TestCheckSaysTheSandboxCannotConfine(t *testing.T) {
	t.Parallel()
	wrap := testbin.Build(t, "./cmd/agenthost/testdata/nolandlock")
	_, args, env := checkSetup(t, checkCase{})
	check := func(mode string) string {
		cmd := exec.Command(wrap, append([]string{testbinHost(t), "check", "--offline"}, append(args, "--set", "sandbox.mode="+mode)...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("check with sandbox.mode %s: %v\n%s", mode, err, out)
		}
		return string(out)
	}
	want := "warning: no plugin, MCP stdio server, hook or wake-word detector will be started: the kernel has no Landlock"
	if out := check("landlock"); !strings.Contains(out, want) || !strings.Contains(out, "sandbox.mode: none") {
		t.Errorf("check with sandbox.mode landlock: want %q:\n%s", want, out)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("no bubblewrap here: ", err)
	}
	if out, want := check("auto"), "children run in the sandbox (sandbox.mode auto: user namespaces through bubblewrap"; !strings.Contains(out, want) {
		t.Errorf("check with sandbox.mode auto: want %q:\n%s", want, out)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
