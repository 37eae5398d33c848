package main

// End-to-end tests of `agenthost mcp`: the real host binary (testkit
// build), real plugins, the MCP Inspector's command-line mode and a go-sdk
// client, against a running daemon and without one.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// mcpCommand is `agenthost mcp` with the sets of a test host (the same
// control socket), as a script an MCP client can be given as its command.
func mcpCommand(t *testing.T, dir string, sets []string, extra ...string) string {
	t.Helper()
	bin := testbin.Build(t, "./cmd/agenthost", "testkit")
	cfg := filepath.Join(dir, "none.yaml")
	if _, err := os.Stat(cfg); err != nil {
		os.WriteFile(cfg, []byte("# defaults\n"), 0o600)
	}
	args := []string{strconv.Quote(bin), "mcp", "--config", strconv.Quote(cfg)}
	for _, s := range sets {
		args = append(args, "--set", strconv.Quote(s))
	}
	for _, e := range extra {
		args = append(args, strconv.Quote(e))
	}
	script := filepath.Join(dir, fmt.Sprintf("agenthost-mcp-%d.sh", time.Now().UnixNano()))
	body := "#!/bin/sh\nexec " + strings.Join(args, " ") + " 2>>" + strconv.Quote(filepath.Join(dir, "mcp.log")) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// inspector runs the MCP Inspector's CLI and decodes its JSON answer.
func inspector(t *testing.T, args ...string) map[string]any {
	t.Helper()
	bin := mcptest.Bin(t, "mcp-inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli"}, args...)...)
	var stderr testbin.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 5 { // the tool returned isError: its result is on stdout
		err = nil
	}
	if err != nil {
		t.Fatalf("inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, &stderr)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

func inspectorTools(t *testing.T, args ...string) []string {
	t.Helper()
	v := inspector(t, append(args, "--method", "tools/list")...)
	var names []string
	list, _ := v["tools"].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		names = append(names, fmt.Sprint(m["name"]))
	}
	return names
}

// inspectorCall calls a tool and returns its text and isError.
func inspectorCall(t *testing.T, tool string, toolArgs []string, args ...string) (string, bool) {
	t.Helper()
	a := append(args, "--method", "tools/call", "--tool-name", tool)
	if len(toolArgs) > 0 {
		a = append(a, append([]string{"--tool-arg"}, toolArgs...)...)
	}
	v := inspector(t, a...)
	var parts []string
	content, _ := v["content"].([]any)
	for _, c := range content {
		m, _ := c.(map[string]any)
		if m["type"] == "text" {
			parts = append(parts, fmt.Sprint(m["text"]))
		}
	}
	isErr, _ := v["isError"].(bool)
	return strings.Join(parts, "\n"), isErr
}

func has(list []string, name string) bool {
	for _, x := range list {
		if x == name {
			return true
		}
	}
	return false
}

// TestMCPInspectorStdio: the MCP Inspector lists the tools and calls a
// plugin's service through `agenthost mcp` on stdio, with a daemon (the
// call shows in the daemon's log) and without one (the providers run in
// the mcp process).
func TestMCPInspectorStdio(t *testing.T) {
	t.Parallel()
	t.Run("daemon", func(t *testing.T) {
		sim := newSim(t, voicetest.Options{})
		d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, testPlugin(t, "bare", ""), filepath.Join(dir, "bare")) })
		pluginsReady(t, sim)
		script := mcpCommand(t, d.dir, d.sets)
		if tools := inspectorTools(t, script); !has(tools, "bare_pid") || !has(tools, "testkit_echo") {
			t.Errorf("tools %v lack bare_pid or testkit_echo", tools)
		}
		text, isErr := inspectorCall(t, "bare_pid", nil, script)
		if _, err := strconv.Atoi(text); err != nil || isErr {
			t.Errorf("bare_pid = %q (isError %v), want the plugin's pid", text, isErr)
		}
		d.logLine("msg=call", "method=bare_pid", "success=true") // the daemon's dispatch ran it
		// The daemon's validation answers through MCP too.
		if text, isErr := inspectorCall(t, "testkit_echo", []string{"text=hi", "count=9"}, script); !isErr || text != "invalid parameters for testkit_echo: count: must be at most 5 (got 9)" {
			t.Errorf("testkit_echo with count 9 = %q (isError %v), want the validation error", text, isErr)
		}
		log, _ := os.ReadFile(filepath.Join(d.dir, "mcp.log"))
		if !strings.Contains(string(log), "serving the running daemon's services over MCP") {
			t.Errorf("agenthost mcp did not use the daemon:\n%s", log)
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		dir := t.TempDir()
		plugins := filepath.Join(dir, "plugins")
		os.Mkdir(plugins, 0o755)
		copyExec(t, testPlugin(t, "bare", ""), filepath.Join(plugins, "bare"))
		sets := []string{"plugins.dirs=" + plugins, "plugins.runtime_dir=" + filepath.Join(dir, "run"), "audio.backend=none", "log.level=debug"}
		script := mcpCommand(t, dir, sets)
		if tools := inspectorTools(t, script); !has(tools, "bare_pid") || !has(tools, "get_current_time") {
			t.Errorf("tools %v lack bare_pid or get_current_time", tools)
		}
		if text, isErr := inspectorCall(t, "testkit_echo", []string{"text=hi", "count=2"}, script); isErr || text != "hihi" {
			t.Errorf("testkit_echo = %q (isError %v), want hihi", text, isErr)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "mcp.log"))
		if !strings.Contains(string(log), "no daemon runs; starting the providers in this process") || !strings.Contains(string(log), "method=testkit_echo") {
			t.Errorf("the mcp process's log (stderr) lacks the local start or the call:\n%s", log)
		}
	})
}

// startMCPHTTP runs `agenthost mcp --http` against the daemon d and waits
// until it listens. It listens on port 0 and the URL is taken from its log
// (a free port found first could be taken before it binds it).
func startMCPHTTP(t *testing.T, d *hostProc, token string) string {
	t.Helper()
	script := mcpCommand(t, d.dir, d.sets, "--http", "127.0.0.1:0", "--token-env", "MCP_TEST_TOKEN")
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), "MCP_TEST_TOKEN="+token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(filepath.Join(d.dir, "mcp.log"))
		if strings.Contains(string(log), token) {
			t.Error("the token reached the log")
		}
	})
	ready := regexp.MustCompile(`MCP endpoint ready.* url=(http://\S+/mcp)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		log, _ := os.ReadFile(filepath.Join(d.dir, "mcp.log"))
		if m := ready.FindSubmatch(log); m != nil {
			return string(m[1])
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(d.dir, "mcp.log"))
			t.Fatalf("agenthost mcp --http exited: %v\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("agenthost mcp --http did not listen")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPInspectorHTTP: the Inspector lists and calls over Streamable HTTP,
// with the bearer token; without it the endpoint refuses.
func TestMCPInspectorHTTP(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, testPlugin(t, "bare", ""), filepath.Join(dir, "bare")) })
	pluginsReady(t, sim)
	const token = "mcp-e2e-token-93c1"
	url := startMCPHTTP(t, d, token)
	auth := []string{url, "--transport", "http", "--header", "Authorization: Bearer " + token}
	if tools := inspectorTools(t, auth...); !has(tools, "bare_pid") {
		t.Errorf("tools %v lack bare_pid", tools)
	}
	if text, isErr := inspectorCall(t, "bare_pid", nil, auth...); isErr || text == "" {
		t.Errorf("bare_pid = %q (isError %v)", text, isErr)
	}
	d.logLine("msg=call", "method=bare_pid", "success=true")
	// Without the token: refused.
	bin := mcptest.Bin(t, "mcp-inspector")
	out, err := exec.Command(bin, "--cli", url, "--transport", "http", "--method", "tools/list").CombinedOutput()
	// (The Inspector takes the 401 as a request to authorize and says so.)
	if err == nil || !strings.Contains(string(out), "auth_required") {
		t.Errorf("a client without the token: %v\n%s\nwant a refusal (401)", err, out)
	}
}

// TestMCPListChangedOnPluginReload: a go-sdk client connected to
// `agenthost mcp` (proxying to the daemon) gets tools/list_changed when a
// plugin is added to the daemon's folder, and the new tool is listed.
func TestMCPListChangedOnPluginReload(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d, dir := startPluginHost(t, sim, func(dir string) { copyExec(t, testPlugin(t, "bare", ""), filepath.Join(dir, "bare")) })
	pluginsReady(t, sim)
	script := mcpCommand(t, d.dir, d.sets)
	changed := make(chan struct{}, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(script)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tool := range res.Tools {
			n = append(n, tool.Name)
		}
		return n
	}
	if n := names(); !has(n, "bare_pid") || has(n, "faulty_ok") {
		t.Fatalf("tools before the reload: %v", n)
	}
	tmp := filepath.Join(dir, ".faulty.tmp")
	copyExec(t, testPlugin(t, "faulty", ""), tmp)
	sh(t, "mv", tmp, filepath.Join(dir, "faulty"))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after a plugin was added")
	}
	if n := names(); !has(n, "faulty_ok") || !has(n, "bare_pid") {
		t.Errorf("tools after the reload: %v", n)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "faulty_ok", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("faulty_ok: %v %+v", err, res)
	}
}

// TestMCPInspectorDaemonEndpoint: the daemon's own Streamable HTTP endpoint
// (mcp.serve.listen, with mcp.serve.token) serves the Inspector the same.
func TestMCPInspectorDaemonEndpoint(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	const token = "mcp-e2e-daemon-token-51f7"
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, testPlugin(t, "bare", ""), filepath.Join(dir, "bare")) },
		"mcp.serve.listen=127.0.0.1:0", "mcp.serve.token="+token)
	pluginsReady(t, sim)
	url, _ := d.mcpURL()
	auth := []string{url, "--transport", "http", "--header", "Authorization: Bearer " + token}
	if tools := inspectorTools(t, auth...); !has(tools, "bare_pid") {
		t.Errorf("tools %v lack bare_pid", tools)
	}
	if text, isErr := inspectorCall(t, "bare_pid", nil, auth...); isErr || text == "" {
		t.Errorf("bare_pid = %q (isError %v)", text, isErr)
	}
	d.logLine("msg=call", "method=bare_pid", "success=true")
	if strings.Contains(d.log.String(), token) {
		t.Error("the MCP token reached the log")
	}
}
