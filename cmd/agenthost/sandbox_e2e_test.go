package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestAPluginCannotReadOrWriteTheDaemonsFiles: an attacker's plugin, run by
// the daemon as its own user and asked by the voice server's model, tries
// to read the token systemd hands the daemon, its configuration and its
// state, to rewrite the mute state and to plant a file in the state folder
// (directly and through a grandchild that left its session). Each fails; a
// file of the system it may read.
func TestAPluginCannotReadOrWriteTheDaemonsFiles(t *testing.T) {
	t.Parallel()
	eachMechanism(t, aPluginCannotReadOrWriteTheDaemonsFiles)
}

// eachMechanism runs f once for each sandbox mechanism this machine has
// (Landlock, user namespaces through bubblewrap), as a subtest named by
// its sandbox.mode.
func eachMechanism(t *testing.T, f func(t *testing.T, mode string)) {
	for _, m := range []sandbox.Mode{sandbox.Landlock, sandbox.Namespaces} {
		t.Run(string(m), func(t *testing.T) {
			if _, err := sandbox.Mechanism(m); err != nil {
				t.Skip(err)
			}
			f(t, string(m))
		})
	}
}

func aPluginCannotReadOrWriteTheDaemonsFiles(t *testing.T, mode string) {
	sim := newSim(t, voicetest.Options{})
	plugins := filepath.Join(t.TempDir(), "plugins")
	os.Mkdir(plugins, 0o755)
	copyExec(t, testPlugin(t, "snoop", ""), filepath.Join(plugins, "snoop"))
	creds := t.TempDir() // as systemd's $CREDENTIALS_DIRECTORY
	token := filepath.Join(creds, "token")
	os.WriteFile(token, []byte("credential-secret-4711"), 0o600)
	d := startHostEnv(t, sim, []string{"CREDENTIALS_DIRECTORY=" + creds}, "plugins.dirs="+plugins, "plugins.lazy=false", "sandbox.mode="+mode)
	ready(t, sim, 1)
	if out, err := d.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v\n%s", err, out)
	}
	state := findFile(t, filepath.Join(d.dir, "state"), "state.json")
	before, _ := os.ReadFile(state)

	if out := call(t, sim, "snoop_read", `{"path":"/etc/hostname"}`); !out.Success {
		t.Fatalf("the plugin cannot read what any program may (so the test proves nothing): %+v", out)
	}
	for _, c := range []struct{ method, path string }{
		{"snoop_read", token}, {"snoop_shell_read", token},
		{"snoop_read", d.config}, {"snoop_read", state},
	} {
		out := call(t, sim, c.method, fmt.Sprintf(`{"path":%q}`, c.path))
		if out.Success || strings.Contains(string(out.Data), "4711") || strings.Contains(string(out.Data), "muted") {
			t.Errorf("%s %s: the plugin read it: %+v", c.method, c.path, out)
		}
	}
	unmute, _ := json.Marshal(map[string]string{"path": state, "content": `{"version":1,"microphone_muted":false}`})
	if out := call(t, sim, "snoop_write", string(unmute)); out.Success {
		t.Errorf("the plugin rewrote the mute state: %+v", out)
	}
	plant := filepath.Join(filepath.Dir(state), "planted.so")
	if out := call(t, sim, "snoop_write", fmt.Sprintf(`{"path":%q,"content":"x"}`, plant)); out.Success {
		t.Errorf("the plugin planted a file in the state folder: %+v", out)
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Errorf("the mute state changed: %s -> %s", before, after)
	}
	if out, err := d.cli("mic"); err != nil || !strings.Contains(out, "microphone off") {
		t.Errorf("agenthost mic: %v\n%s", err, out)
	}
}

// findFile finds a file by name under dir.
func findFile(t *testing.T, dir, name string) string {
	t.Helper()
	var found string
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Name() == name && found == "" {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no %s under %s", name, dir)
	}
	return found
}

// TestAnMCPServerCannotReadOrWriteTheDaemonsFiles: the same from an MCP
// stdio server (the attacker's, built with the go-sdk) that the owner
// configured: its tools cannot read the credential, the configuration or
// the state, nor rewrite the mute state; its own folder (its HOME) it may
// write.
func TestAnMCPServerCannotReadOrWriteTheDaemonsFiles(t *testing.T) {
	t.Parallel()
	eachMechanism(t, anMCPServerCannotReadOrWriteTheDaemonsFiles)
}

func anMCPServerCannotReadOrWriteTheDaemonsFiles(t *testing.T, mode string) {
	sim := newSim(t, voicetest.Options{})
	attacker := testPlugin(t, "attacker", "")
	creds := t.TempDir()
	token := filepath.Join(creds, "token")
	os.WriteFile(token, []byte("credential-secret-4711"), 0o600)
	servers := filepath.Join(t.TempDir(), "mcp.json")
	conf, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"evil": map[string]any{"command": attacker, "args": []string{"-mcp"}}}})
	os.WriteFile(servers, conf, 0o600)
	d := startHostEnv(t, sim, []string{"CREDENTIALS_DIRECTORY=" + creds}, "mcp.servers_file="+servers, "sandbox.mode="+mode)
	waitFor(t, sim, "the MCP server's tools", func() bool { _, ok := sim.Services()["mcp_read"]; return ok })
	if out, err := d.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v\n%s", err, out)
	}
	state := findFile(t, filepath.Join(d.dir, "state"), "state.json")
	before, _ := os.ReadFile(state)
	if out := call(t, sim, "mcp_read", `{"path":"/etc/hostname"}`); !out.Success {
		t.Fatalf("the server cannot read what any program may (so the test proves nothing): %+v", out)
	}
	for _, p := range []string{token, d.config, state} {
		out := call(t, sim, "mcp_read", fmt.Sprintf(`{"path":%q}`, p))
		if out.Success || strings.Contains(string(out.Data), "4711") || strings.Contains(string(out.Data), "muted") {
			t.Errorf("mcp_read %s: the server read it: %+v", p, out)
		}
	}
	unmute, _ := json.Marshal(map[string]string{"path": state, "content": `{"version":1,"microphone_muted":false}`})
	if out := call(t, sim, "mcp_write", string(unmute)); out.Success {
		t.Errorf("the server rewrote the mute state: %+v", out)
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Errorf("the mute state changed: %s -> %s", before, after)
	}
	home := filepath.Join(d.dir, "state", "mcp", "evil")
	if out := call(t, sim, "mcp_write", fmt.Sprintf(`{"path":%q,"content":"mine"}`, filepath.Join(home, "notes"))); !out.Success {
		t.Errorf("the server cannot write its own folder %s: %+v", home, out)
	}
}

// TestWithoutLandlockNoChildStartsAndTheLogSaysWhy: on a kernel without
// Landlock (provoked by nolandlock's seccomp filter, which answers its call
// with ENOSYS as such a kernel does, as the Raspberry Pi OS kernel's) auto
// confines the plugin in user namespaces instead and says so; landlock,
// and auto where bubblewrap is missing too, start no plugin, fail closed
// and say at the start what to do; none, the owner's choice, starts the
// plugin and warns.
func TestWithoutLandlockNoChildStartsAndTheLogSaysWhy(t *testing.T) {
	t.Parallel()
	wrap := testbin.Build(t, "./cmd/agenthost/testdata/nolandlock")
	_, bwrapErr := exec.LookPath("bwrap")
	for _, c := range []struct{ name, mode string }{{"landlock", "landlock"}, {"none", "none"}, {"auto", "auto"}, {"auto_without_bubblewrap", "auto"}} {
		t.Run(c.name, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{})
			dir := t.TempDir()
			plugins := filepath.Join(dir, "plugins")
			os.Mkdir(plugins, 0o755)
			copyExec(t, bundled(t, "clock"), filepath.Join(plugins, "clock"))
			conf := filepath.Join(dir, "none.yaml")
			os.WriteFile(conf, []byte("# defaults\n"), 0o600)
			args := []string{testbinHost(t), "run", "--config", conf}
			for _, s := range []string{"server.address=" + sim.Addr(), "plugins.runtime_dir=" + filepath.Join(dir, "run"), "plugins.dirs=" + plugins,
				"plugins.state_dir=" + filepath.Join(dir, "state"), "plugins.lazy=false", "audio.backend=none", "services.builtins=false", "sandbox.mode=" + c.mode} {
				args = append(args, "--set", s)
			}
			var env []string
			switch c.name {
			case "auto":
				if bwrapErr != nil {
					t.Skip("no bubblewrap here: ", bwrapErr)
				}
			case "auto_without_bubblewrap":
				// A PATH with everything of this one but bwrap.
				bin := filepath.Join(dir, "bin")
				os.Mkdir(bin, 0o755)
				for _, d := range filepath.SplitList(os.Getenv("PATH")) {
					entries, _ := os.ReadDir(d)
					for _, e := range entries {
						if e.Name() != "bwrap" {
							os.Symlink(filepath.Join(d, e.Name()), filepath.Join(bin, e.Name()))
						}
					}
				}
				env = append(env, "PATH="+bin)
			}
			d := startHostArgs(t, wrap, args, dir, env...)
			ready(t, sim, 1)
			switch c.name {
			case "none":
				waitFor(t, sim, "the clock's service", func() bool { _, ok := sim.Services()["get_current_time"]; return ok })
				d.logShows("sandbox.mode is none")
				return
			case "auto":
				waitFor(t, sim, "the clock's service", func() bool { _, ok := sim.Services()["get_current_time"]; return ok })
				d.logShows("user namespaces through bubblewrap: Landlock is not available here")
				if ps, _ := exec.Command("ps", "-o", "args=", "--ppid", strconv.Itoa(d.cmd.Process.Pid)).Output(); !strings.Contains(string(ps), "bwrap --unshare-user") {
					t.Errorf("the clock plugin does not run under bubblewrap; the daemon's children:\n%s", ps)
				}
				return
			case "auto_without_bubblewrap":
				d.logShows("bubblewrap is not installed")
			}
			d.logShows("no plugin, MCP stdio server, hook or wake-word detector will be started: the kernel has no Landlock")
			d.logShows("sandbox.mode: none")
			d.logShows("plugin cannot run")
			if _, ok := sim.Services()["get_current_time"]; ok {
				t.Error("the clock plugin was started without its sandbox")
			}
		})
	}
}
