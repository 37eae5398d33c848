package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/device"
	hostwake "github.com/agenthost/agenthost/host/wakeword"

	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestMCPServerEverythingThroughTheHost: the reference MCP server, in each
// of its transports, as a provider of the real host: its tools reach the
// simulator's register, and calls from the simulator (numbers, an error of
// the server's, structured content) come back right. A server that dies
// leaves the register and comes back with its restart.
func TestMCPServerEverythingThroughTheHost(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "sse", "streamable-http"} {
		t.Run(transport, func(t *testing.T) {
			var server map[string]any
			var http *mcptest.Server
			switch transport {
			case "stdio":
				server = map[string]any{"command": mcptest.Bin(t, "mcp-server-everything"), "args": []any{"stdio"}}
			case "sse":
				http = mcptest.StartEverything(t, "sse")
				server = map[string]any{"url": http.URL("/sse"), "type": "sse"}
			default:
				http = mcptest.StartEverything(t, "streamableHttp")
				server = map[string]any{"url": http.URL("/mcp")}
			}
			sim := newSim(t, voicetest.Options{})
			f := startFileHost(t, sim, map[string]any{
				"mcp":     map[string]any{"servers": map[string]any{"everything": server}},
				"plugins": map[string]any{"restart": map[string]any{"base": "50ms", "cap": "200ms"}, "health_interval": "500ms"},
			})
			hasSum := func() bool { _, ok := sim.Services()["get-sum"]; return ok }
			waitFor(t, sim, "server-everything's tools in the register", hasSum)

			if out := call(t, sim, "get-sum", `{"a":2,"b":3.5}`); !out.Success || !strings.Contains(string(out.Data), "5.5") {
				t.Errorf("get-sum: %+v", out)
			}
			if out := call(t, sim, "get-resource-reference", `{"resourceId":0}`); out.Success || !strings.Contains(out.Error, "resourceId") {
				t.Errorf("the server's error: %+v", out)
			}
			out := call(t, sim, "get-structured-content", `{"location":"Chicago"}`)
			var data map[string]any
			if !out.Success || json.Unmarshal(out.Data, &data) != nil || data["temperature"] == nil {
				t.Errorf("structured content: %+v", out)
			}

			// The server dies: its tools leave, and come back with it.
			regs := len(sim.Registers())
			if http != nil {
				port := http.Port
				http.Stop()
				waitFor(t, sim, "the tools to leave while the server is down", func() bool { return len(sim.Registers()) > regs && !hasSum() })
				mcptest.StartEverythingOn(t, map[string]string{"sse": "sse", "streamable-http": "streamableHttp"}[transport], port)
			} else {
				st := f.status(t)
				pid := st.MCP[0].Session.PID
				if pid == 0 {
					t.Fatalf("no pid in %+v", st.MCP)
				}
				p, _ := os.FindProcess(pid)
				p.Kill()
			}
			waitFor(t, sim, "the tools back after the restart", func() bool { return len(sim.Registers()) > regs && hasSum() })
			if out := call(t, sim, "get-sum", `{"a":1,"b":1}`); !out.Success {
				t.Errorf("after the restart: %+v", out)
			}
		})
	}
}

// TestMCPListChangedIsOneRegister: a server's tools/list_changed that
// changes its tools gives exactly one new register; one that changes
// nothing gives none.
func TestMCPListChangedIsOneRegister(t *testing.T) {
	t.Parallel()
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	sim := newSim(t, voicetest.Options{})
	startFileHost(t, sim, map[string]any{"mcp": map[string]any{"servers": map[string]any{"toy": map[string]any{"command": toy}}}})
	waitFor(t, sim, "the toy's tools", func() bool { _, ok := sim.Services()["add_tool"]; return ok })
	regs := len(sim.Registers())
	if out := call(t, sim, "touch_tools", `{}`); !out.Success {
		t.Fatalf("%+v", out)
	}
	if out := call(t, sim, "add_tool", `{}`); !out.Success {
		t.Fatalf("%+v", out)
	}
	r := waitRegisters(t, sim, regs+1, "the register with the new tool")
	if _, ok := r.Services["extra"]; !ok {
		t.Fatalf("the new register lacks the added tool: %v", r.Services)
	}
	time.Sleep(500 * time.Millisecond) // a second register would show by now
	if n := len(sim.Registers()); n != regs+1 {
		t.Fatalf("%d registers after one change, want %d", n, regs+1)
	}
}

// TestMCPDesktopConfigFileWorksUnchanged: a desktop client's mcpServers
// JSON, named by mcp.servers_file, starts its servers as is.
func TestMCPDesktopConfigFileWorksUnchanged(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	desktop := `{"globalShortcut": "", "mcpServers": {"everything": {"command": "` + mcptest.Bin(t, "mcp-server-everything") +
		`", "args": ["stdio"], "env": {"DEBUG": "${NOT_SET:-0}"}, "autoApprove": ["echo"]}}}`
	os.WriteFile(file, []byte(desktop), 0o600)
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{"mcp": map[string]any{"servers_file": file}})
	waitFor(t, sim, "the desktop config's server", func() bool { _, ok := sim.Services()["echo"]; return ok })
	if out := call(t, sim, "echo", `{"message":"hi"}`); !out.Success || !strings.Contains(string(out.Data), "hi") {
		t.Fatalf("%+v", out)
	}
	f.logLine("level=WARN", "autoApprove")
}

// status reads `agenthost status` of the running host.
func (d *hostProc) status(t *testing.T) hostStatus {
	t.Helper()
	out, err := d.cli("status")
	if err != nil {
		t.Fatalf("agenthost status: %v\n%s", err, out)
	}
	var st hostStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("agenthost status: %v\n%s", err, out)
	}
	return st
}

type hostStatus struct {
	MCP       []mcpServerStatus `json:"mcp_servers"`
	LeftOut   []string          `json:"left_out"`
	Conflicts []string          `json:"conflicts"`
	Device    *device.Status    `json:"device"`
	WakeWord  hostwake.Status   `json:"wake_word"`
}

// mcpServerStatus is one MCP server in `agenthost status`.
type mcpServerStatus struct {
	Name     string
	State    string
	Restarts int
	Session  *struct {
		PID      int
		Relisted int
	}
}

// TestBadMCPServersLeaveTheHostServing: a server whose program is not
// there, one that prints only junk on stdout, one that hangs at
// initialize, one with a tool whose schema is invalid, and a result far
// over services.max_result: each is said in the log, and the host serves
// everything else.
func TestBadMCPServersLeaveTheHostServing(t *testing.T) {
	t.Parallel()
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, map[string]any{
		"services": map[string]any{"max_result": "1KiB"},
		"mcp": map[string]any{"start_timeout": "2s", "servers": map[string]any{
			"absent":  map[string]any{"command": "/nonexistent/mcp-server"},
			"junk":    map[string]any{"command": toy, "args": []any{"-mode", "junk"}},
			"hang":    map[string]any{"command": toy, "args": []any{"-mode", "hang"}},
			"schemas": map[string]any{"command": toy, "args": []any{"-mode", "badschema"}, "prefix": "s_"},
		}},
	})
	waitFor(t, sim, "the good tools of the bad-schema server", func() bool { _, ok := sim.Services()["s_ping"]; return ok })
	for _, line := range [][]string{
		{"mcp=absent", "/nonexistent/mcp-server"},
		{"mcp=junk", "not JSON"},
		{"mcp=hang", "initialize"},
		{"mcp=schemas", "broken"},
	} {
		f.logLine(line...)
	}
	if _, ok := sim.Services()["s_broken"]; ok {
		t.Error("a tool with an invalid schema was registered")
	}
	if out := call(t, sim, "s_big", `{"n":100000}`); out.Success || !strings.Contains(out.Error, "over the 1 KiB limit") {
		t.Errorf("a result over the cap: %+v", out)
	}
	if out := call(t, sim, "get_current_time", `{}`); !out.Success {
		t.Errorf("the host stopped serving: %+v", out)
	}
	if out := call(t, sim, "s_ping", `{}`); !out.Success {
		t.Errorf("the good tools stopped: %+v", out)
	}
}

// TestReloadAddsAndRemovesAnMCPServer: an MCP server added to the file
// starts, and one removed stops, without a restart.
func TestReloadAddsAndRemovesAnMCPServer(t *testing.T) {
	t.Parallel()
	toy := testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
	sim := newSim(t, voicetest.Options{})
	f := startFileHost(t, sim, nil)
	ready(t, sim, 1)
	f.edit(t, map[string]any{"mcp": map[string]any{"servers": map[string]any{"toy": map[string]any{"command": toy}}}})
	waitFor(t, sim, "the added server's tools", func() bool { _, ok := sim.Services()["add"]; return ok })
	f.conf["mcp"] = map[string]any{"servers": map[string]any{}} // (edit merges; this replaces)
	f.write(t)
	waitFor(t, sim, "the removed server's tools to leave", func() bool { _, ok := sim.Services()["add"]; return !ok })
}
