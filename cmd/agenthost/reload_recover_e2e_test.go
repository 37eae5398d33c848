package main

// End-to-end tests of reloads that must bring back what a configuration
// mistake took away: a plugin broken by its settings, an edited
// mcp.servers_file, a provider whose names a prefix made too long.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// reloadWays are the two ways a reload happens: the file watch, and SIGHUP
// with the edited file out of the watcher's sight.
var reloadWays = []string{"file watch", "SIGHUP"}

// applied makes the host take in an edit just written: nothing for the
// file watch; SIGHUP otherwise.
func (f *fileHost) applied(how string) {
	if how == "SIGHUP" {
		f.cmd.Process.Signal(syscall.SIGHUP)
	}
}

// onlySIGHUP checks that every reload so far came from SIGHUP, so that a
// pass of the SIGHUP case cannot be the watcher's doing.
func (f *fileHost) onlySIGHUP(t *testing.T, how string) {
	t.Helper()
	if how == "SIGHUP" && f.logCount("reloading the configuration", "the file changed") > 0 {
		t.Fatal("the watcher saw the hidden edit: this case does not test SIGHUP")
	}
}

// waitPlugins waits until `agenthost plugins` satisfies ok.
func (f *fileHost) waitPlugins(t *testing.T, what string, ok func(map[string]pluginmgr.Status) bool) map[string]pluginmgr.Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list := f.pluginList()
		if ok(list) {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: agenthost plugins shows %+v", what, list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReloadRetriesPluginsBrokenBySettings: files refused for its config (a
// relative root) and clock refused for a wrong sha256 pin are broken; once
// the file is fixed and reloaded, both serve again, with no restart of the
// host and no touch of the binaries. (files is dropped in after the start:
// at the start its rejected config is a configuration error, exit 78.)
func TestReloadRetriesPluginsBrokenBySettings(t *testing.T) {
	t.Parallel()
	clock := bundled(t, "clock")
	b, err := os.ReadFile(clock)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	for _, how := range reloadWays {
		t.Run(how, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{})
			f := startFileHostWith(t, sim, map[string]any{
				"services": map[string]any{"builtins": false},
				"plugins": map[string]any{"config": map[string]any{"files": map[string]any{"root": "relative/files"}},
					"sha256": map[string]any{"clock": strings.Repeat("ab", 32)}},
			}, fileHostOptions{hidden: how == "SIGHUP", install: func(dir string) {
				copyExec(t, clock, filepath.Join(dir, "clock"))
			}})
			pluginsReady(t, sim)
			plugins := filepath.Join(f.dir, "plugins")
			copyExec(t, bundled(t, "files"), filepath.Join(plugins, "files.tmp"))
			if err := os.Rename(filepath.Join(plugins, "files.tmp"), filepath.Join(plugins, "files")); err != nil {
				t.Fatal(err)
			}
			f.waitPlugins(t, "both plugins broken", func(l map[string]pluginmgr.Status) bool {
				return l["clock"].State == "broken" && l["files"].State == "broken"
			})

			root := filepath.Join(t.TempDir(), "files")
			f.edit(t, map[string]any{"plugins": map[string]any{"config": map[string]any{"files": map[string]any{"root": root}},
				"sandbox": map[string]any{"files": map[string]any{"write": []any{root}}},
				"sha256":  map[string]any{"clock": hex.EncodeToString(sum[:])}}})
			f.applied(how)
			waitFor(t, sim, "the fixed plugins' services", func() bool {
				s := sim.Services()
				_, c := s["get_current_time"]
				_, l := s["list_files"]
				return c && l
			})
			if out := call(t, sim, "get_current_time", `{}`); !out.Success {
				t.Fatalf("get_current_time: %+v", out)
			}
			if out := call(t, sim, "create_file", `{"filename":"a.txt","content":"hi"}`); !out.Success {
				t.Fatalf("create_file: %+v", out)
			}
			if got, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(got) != "hi" {
				t.Fatalf("the file in the new root: %q %v", got, err)
			}
			list := f.pluginList()
			for _, name := range []string{"clock", "files"} {
				if st := list[name].State; st != "running" && st != "idle" {
					t.Errorf("%s: %+v", name, list[name])
				}
			}
			f.logLine("plugin=files", "trying it again")
			f.logLine("plugin=clock", "trying it again")
			if f.logCount("agenthost started") != 1 {
				t.Fatal("the host restarted")
			}
			f.onlySIGHUP(t, how)
		})
	}
}

// serversFile is an mcp.servers_file in a folder of its own (not the
// YAML's); hidden makes it a symbolic link to a file in yet another folder,
// which the watcher does not see change.
type serversFile struct {
	path, real string
}

func newServersFile(t *testing.T, hidden bool) *serversFile {
	s := &serversFile{path: filepath.Join(t.TempDir(), "mcp.json")}
	s.real = s.path
	if hidden {
		s.real = filepath.Join(t.TempDir(), "mcp.json")
		if err := os.Symlink(s.real, s.path); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// write replaces the file's content (a new file renamed over the old).
func (s *serversFile) write(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(s.real+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.real+".tmp", s.real); err != nil {
		t.Fatal(err)
	}
}

// servers writes an mcpServers document with the given servers.
func (s *serversFile) servers(t *testing.T, servers map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	s.write(t, string(b))
}

// TestReloadAppliesAnEditedServersFile: the file named by mcp.servers_file,
// in another folder than the YAML, is watched and read again on SIGHUP: an
// edit adds, changes and removes servers; an edit that breaks the file is
// refused and the running servers stay.
func TestReloadAppliesAnEditedServersFile(t *testing.T) {
	t.Parallel()
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	for _, how := range reloadWays {
		t.Run(how, func(t *testing.T) {
			file := newServersFile(t, how == "SIGHUP")
			file.servers(t, map[string]any{"toy": map[string]any{"command": toy}})
			sim := newSim(t, voicetest.Options{})
			f := startFileHostWith(t, sim, map[string]any{"mcp": map[string]any{"servers_file": file.path}},
				fileHostOptions{hidden: how == "SIGHUP"})
			has := func(names ...string) func() bool {
				return func() bool {
					s := sim.Services()
					for _, n := range names {
						want := !strings.HasPrefix(n, "-")
						if _, ok := s[strings.TrimPrefix(n, "-")]; ok != want {
							return false
						}
					}
					return true
				}
			}
			waitFor(t, sim, "the file's server", has("add"))

			file.servers(t, map[string]any{"toy": map[string]any{"command": toy, "prefix": "t_"},
				"more": map[string]any{"command": toy, "prefix": "m_"}})
			f.applied(how)
			waitFor(t, sim, "a server added and one changed", has("t_add", "m_add", "-add"))

			file.servers(t, map[string]any{"more": map[string]any{"command": toy, "prefix": "m_"}})
			f.applied(how)
			waitFor(t, sim, "a server removed", has("m_add", "-t_add"))

			reloads := f.logCount("configuration reloaded")
			file.write(t, `{"mcpServers": {"more": `)
			f.applied(how)
			f.logLine("level=ERROR", "mcp.servers_file", "the running servers stay")
			f.waitLogCount(reloads+1, "configuration reloaded")
			if out := call(t, sim, "m_add", `{"a":1,"b":2}`); !out.Success {
				t.Fatalf("the running server did not stay: %+v", out)
			}
			f.onlySIGHUP(t, how)
		})
	}
}

// TestReloadPrefixTooLongThenRemoved: a services.prefixes entry that makes
// a plugin's names too long holds its services out of the register (and
// `agenthost plugins` says so) when a reload sets it, and leaves the plugin
// broken when it is there at start; removing the prefix brings them back.
func TestReloadPrefixTooLongThenRemoved(t *testing.T) {
	t.Parallel()
	long := map[string]any{"builtins": false, "prefixes": map[string]any{"clock": strings.Repeat("p", 60)}}
	install := func(dir string) { copyExec(t, bundled(t, "clock"), filepath.Join(dir, "clock")) }
	clockIn := func(sim *voicetest.Server) func() bool {
		return func() bool { _, ok := sim.Services()["get_current_time"]; return ok }
	}
	t.Run("set by a reload", func(t *testing.T) {
		sim := newSim(t, voicetest.Options{})
		f := startFileHostWith(t, sim, map[string]any{"services": map[string]any{"builtins": false}}, fileHostOptions{install: install})
		waitFor(t, sim, "the clock", clockIn(sim))
		f.conf["services"] = long
		f.write(t)
		waitFor(t, sim, "the clock's service to leave", func() bool { return !clockIn(sim)() })
		if st := f.pluginList()["clock"]; len(st.Services) != 0 || !strings.Contains(st.LastError, "prefix") {
			t.Errorf("agenthost plugins while the prefix is too long: %+v", st)
		}
		f.conf["services"] = map[string]any{"builtins": false} // (edit merges; this replaces)
		f.write(t)
		waitFor(t, sim, "the clock's service to come back", clockIn(sim))
		if out := call(t, sim, "get_current_time", `{}`); !out.Success {
			t.Fatalf("%+v", out)
		}
		if st := f.pluginList()["clock"]; len(st.Services) == 0 || st.LastError != "" {
			t.Errorf("agenthost plugins after the prefix was removed: %+v", st)
		}
	})
	t.Run("set at start", func(t *testing.T) {
		sim := newSim(t, voicetest.Options{})
		f := startFileHostWith(t, sim, map[string]any{"services": long}, fileHostOptions{install: install})
		pluginsReady(t, sim)
		f.waitPlugins(t, "the clock broken", func(l map[string]pluginmgr.Status) bool {
			return l["clock"].State == "broken" && strings.Contains(l["clock"].LastError, "prefix")
		})
		f.conf["services"] = map[string]any{"builtins": false}
		f.write(t)
		waitFor(t, sim, "the clock's service to come back", clockIn(sim))
		f.logLine("plugin=clock", "trying it again", "its services prefix")
	})
}

// TestReloadRetriesAnMCPServerParkedByAPrefix: an MCP server whose tools a
// services.prefixes entry makes too long is refused at each start until it
// is given up (broken or parked); removing the prefix tries it again.
func TestReloadRetriesAnMCPServerParkedByAPrefix(t *testing.T) {
	t.Parallel()
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	sim := newSim(t, voicetest.Options{})
	f := startFileHostWith(t, sim, map[string]any{
		"services": map[string]any{"prefixes": map[string]any{"toy": strings.Repeat("p", 60)}},
		"plugins":  map[string]any{"restart": map[string]any{"base": "10ms", "cap": "20ms"}},
		"mcp":      map[string]any{"servers": map[string]any{"toy": map[string]any{"command": toy}}},
	}, fileHostOptions{})
	ready(t, sim, 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := f.status(t)
		if len(st.MCP) == 1 && (st.MCP[0].State == "parked" || st.MCP[0].State == "broken") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never gave up: %+v", st.MCP)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.conf["services"] = map[string]any{}
	f.write(t)
	waitFor(t, sim, "the server's tools", func() bool { _, ok := sim.Services()["add"]; return ok })
	f.logLine("mcp=toy", "trying it again")
}
