package mcpclient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
)

// A claude_desktop_config.json as users have it, with keys agenthost does
// not use.
const desktopJSON = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "everything": {
      "command": "${EVERYTHING_BIN}",
      "args": ["stdio"],
      "env": {"API_KEY": "${MCP_TEST_KEY:-default-key}", "HOME_DIR": "${MCP_TEST_UNSET}"},
      "autoApprove": ["echo"],
      "disabled": false,
      "timeout": 60
    },
    "remote": {
      "type": "http",
      "url": "https://mcp.example/mcp?token=${MCP_TEST_TOKEN}",
      "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"},
      "allowedTools": ["search"],
      "excluded_tools": ["delete_*"],
      "prefix": "web_",
      "timeout": "1m30s"
    },
    "off": {"disabled": true}
  }
}`

func TestParseServersJSON(t *testing.T) {
	t.Setenv("EVERYTHING_BIN", "/opt/everything")
	t.Setenv("MCP_TEST_TOKEN", "tok123")
	t.Setenv("MCP_TEST_KEY", "")
	servers, warnings, err := mcpclient.ParseServersJSON([]byte(desktopJSON))
	if err != nil {
		t.Fatal(err)
	}
	e := servers["everything"]
	if e.Command != "/opt/everything" || strings.Join(e.Args, " ") != "stdio" || e.Timeout.D() != time.Minute {
		t.Errorf("everything: %+v", e)
	}
	if e.Env["API_KEY"] != "default-key" || e.Env["HOME_DIR"] != "" {
		t.Errorf("env expansion: %v (an empty variable takes the :- default; an unset one without default is empty)", e.Env)
	}
	r := servers["remote"]
	if r.URL != "https://mcp.example/mcp?token=tok123" || r.Headers["Authorization"] != "Bearer tok123" || r.Prefix != "web_" ||
		strings.Join(r.AllowedTools, ",") != "search" || strings.Join(r.ExcludedTools, ",") != "delete_*" || r.Timeout.D() != 90*time.Second || r.Type != "http" {
		t.Errorf("remote: %+v", r)
	}
	if !servers["off"].Disabled {
		t.Errorf("off: %+v", servers["off"])
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{`key "globalShortcut" is not used`, `mcpServers.everything: key "autoApprove" is not used by agenthost and is ignored`,
		`mcpServers.everything.env.HOME_DIR: environment variable MCP_TEST_UNSET is not set`} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	red := r.Redacted()
	b, _ := json.Marshal(red)
	if strings.Contains(string(b), "tok123") || !strings.Contains(string(b), "***") {
		t.Errorf("redacted config shows a secret: %s", b)
	}
}

func TestParseServersJSONErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[`, "not a JSON object"},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://y"}}}`, "mcpServers.a: both command and url are set"},
		{`{"mcpServers": {"a": {"args": ["x"]}}}`, "mcpServers.a: neither command"},
		{`{"mcpServers": {"a b": {"command": "x"}}}`, `server name "a b"`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, `timeout "soon" is neither`},
		{`{"mcpServers": {"a": {"command": "x", "args": "not a list"}}}`, "mcpServers.a:"},
	} {
		if _, _, err := mcpclient.ParseServersJSON([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	t.Setenv("A", "x")
	t.Setenv("EMPTY", "")
	for in, want := range map[string]string{
		"${A}": "x", "${A:-d}": "x", "${EMPTY:-d}": "d", "${NOPE_UNSET:-d}": "d", "p$A${A}": "p$Ax", "${A}${A}": "xx", "none": "none", "${NOPE_UNSET}": "",
	} {
		if got, _ := mcpclient.ExpandEnv(in); got != want {
			t.Errorf("ExpandEnv(%q) = %q, want %q", in, got, want)
		}
	}
	if _, missing := mcpclient.ExpandEnv("${NOPE_UNSET} ${A}"); strings.Join(missing, ",") != "NOPE_UNSET" {
		t.Errorf("missing = %v", missing)
	}
}

// TestDesktopConfigWorksUnchanged: an mcpServers file pasted from a
// desktop client starts its server as it is.
func TestDesktopConfigWorksUnchanged(t *testing.T) {
	t.Setenv("EVERYTHING_BIN", mcptest.Bin(t, "mcp-server-everything"))
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	os.WriteFile(path, []byte(desktopJSON), 0o600)
	servers, _, err := mcpclient.LoadServersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, mcpclient.Options{Name: "everything", Server: servers["everything"]})
	if got, err := call(t, s, "echo", `{"message":"hello"}`); err != nil || !strings.Contains(got, "hello") {
		t.Errorf("echo = %s, %v", got, err)
	}
	// The env reached the server.
	if got, err := call(t, s, "get-env", `{}`); err != nil || !strings.Contains(got, "default-key") {
		t.Errorf("get-env lacks API_KEY=default-key: %.200s, %v", got, err)
	}
}
