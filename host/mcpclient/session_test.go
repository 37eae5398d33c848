package mcpclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/mcpclient/mcptest"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func newLog() (*slog.Logger, *testbin.Buffer) {
	b := &testbin.Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

func toy(t *testing.T) string {
	return testbin.Build(t, "./host/mcpclient/testdata/mcptoy")
}

// start starts a session and kills it when the test ends.
func start(t *testing.T, o mcpclient.Options) *mcpclient.Session {
	t.Helper()
	c, err := startErr(t, o, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startErr(t *testing.T, o mcpclient.Options, timeout time.Duration) (*mcpclient.Session, error) {
	t.Helper()
	if o.Name == "" {
		o.Name = "toy"
	}
	starter, err := mcpclient.NewStarter(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := starter(ctx)
	if err != nil {
		return nil, err
	}
	s := c.(*mcpclient.Session)
	t.Cleanup(s.Kill)
	return s, nil
}

func names(c supervise.Child) string {
	var n []string
	for _, s := range c.Services() {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func call(t *testing.T, c supervise.Child, method, params string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data, err := c.Call(ctx, method, json.RawMessage(params))
	return string(data), err
}

func wantLog(t *testing.T, logs *testbin.Buffer, parts ...string) {
	t.Helper()
	for _, l := range strings.Split(logs.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return
		}
	}
	t.Errorf("no log line has all of %q:\n%s", parts, logs)
}

// eventually waits (without a time limit of its own: the test's deadline
// bounds it) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestToyTools(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}, Log: log})
	if got, want := names(s), "add,add_tool,ask_model,big,crash,fail,ping,touch_tools,weather"; got != want {
		t.Errorf("services %s, want %s", got, want)
	}
	if info := s.Info(); info.PID == 0 || info.Transport != "stdio" || info.Version != "0.1.0" {
		t.Errorf("info %+v", info)
	}
	for _, sv := range s.Services() {
		if sv.Name == "add" && string(sv.Parameters) != `{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"type":"object"}` {
			t.Errorf("add's parameters %s", sv.Parameters)
		}
	}
	if got, err := call(t, s, "add", `{"a":2,"b":3.5}`); err != nil || got != `"5.5"` {
		t.Errorf("add = %s, %v", got, err)
	}
	if got, err := call(t, s, "weather", `{}`); err != nil || got != `{"conditions":"sunny","temperature":21.5}` {
		t.Errorf("weather = %s, %v (want the structured content)", got, err)
	}
	if _, err := call(t, s, "fail", `{}`); err == nil || err.Error() != "the printer is on fire" || errors.Is(err, supervise.ErrGone) {
		t.Errorf("fail: %v, want the server's message", err)
	}
	if _, err := call(t, s, "nope", `{}`); err == nil || !strings.Contains(err.Error(), "nope") || errors.Is(err, supervise.ErrGone) {
		t.Errorf("unknown tool: %v, want the server's JSON-RPC error", err)
	}
	wantLog(t, logs, "mcptoy: serving on stdio", "stream=stderr", "mcp=toy")
}

// TestSamplingRefused: a server that asks for sampling (a request from
// server to client, as servers on protocols before 2026-07-28 do) gets a
// JSON-RPC error that says why.
func TestSamplingRefused(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}, Log: log, ProtocolVersion: "2025-11-25"})
	got, err := call(t, s, "ask_model", `{}`)
	if err != nil || !strings.Contains(got, "sampling refused") || !strings.Contains(got, "agenthost does not support sampling/createMessage: it has no local language model") {
		t.Errorf("sampling: %s, %v; want the refusal", got, err)
	}
	wantLog(t, logs, "refused a request from the server", "method=sampling/createMessage", "mcp=toy")
}

func TestToyListChanged(t *testing.T) {
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}})
	if got, err := call(t, s, "add_tool", `{}`); err != nil || got != `"added"` {
		t.Fatalf("add_tool = %s, %v", got, err)
	}
	<-s.Changed()
	if !strings.Contains(names(s), "extra") {
		t.Errorf("after list_changed: %s, want extra", names(s))
	}
	// A list_changed that changes nothing: relisted, no signal.
	before := s.Status().Relisted
	if _, err := call(t, s, "touch_tools", `{}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a second tools/list", func() bool { return s.Status().Relisted > before })
	select {
	case <-s.Changed():
		t.Error("a list_changed that left the tools as they were signalled Changed")
	default:
	}
	if st := s.Status(); st.ListChanged < 2 {
		t.Errorf("status %+v, want the notifications counted", st)
	}
}

func TestToyFilters(t *testing.T) {
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t), AllowedTools: []string{"a*", "ping", "fail"}, ExcludedTools: []string{"ask_*"}, Timeout: mcpclient.Duration(7 * time.Second)}})
	if got, want := names(s), "add,add_tool,fail,ping"; got != want {
		t.Errorf("services %s, want %s", got, want)
	}
	if sv := s.Services()[0]; sv.Timeout != 7*time.Second {
		t.Errorf("timeout %v, want the configured 7s", sv.Timeout)
	}
}

func TestCommandNotFound(t *testing.T) {
	log, logs := newLog()
	_, err := startErr(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: "agenthost-no-such-mcp-server"}, Log: log}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), `command "agenthost-no-such-mcp-server" was not found`) {
		t.Fatalf("error %v", err)
	}
	wantLog(t, logs, "mcp server did not start", "mcp=toy", "was not found")
}

func TestGarbageBannerOnStdout(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t), Args: []string{"-mode", "garbage"}}, Log: log})
	if got, err := call(t, s, "ping", `{}`); err != nil || got != `"pong"` {
		t.Errorf("ping = %s, %v", got, err)
	}
	wantLog(t, logs, "level=WARN", "not JSON-RPC on stdout", "mcptoy v0.1 starting", "mcp=toy")
}

// TestJSONThatIsNotJSONRPCIsJunk: a line on stdout that is JSON (or
// nearly) but not a JSON-RPC message ({"foo":1}, [1,2], a wrong version, a
// value with trailing data) is logged and skipped like any other junk, at
// start and while serving; it does not end the session (found by attack:
// one such line ended it, and five parked the server).
func TestJSONThatIsNotJSONRPCIsJunk(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t), Args: []string{"-mode", "jsonjunk"}}, Log: log})
	for i := range 3 {
		if got, err := call(t, s, "print_junk", `{}`); err != nil || got != `"printed"` {
			t.Fatalf("print_junk #%d = %s, %v", i+1, got, err)
		}
	}
	if got, err := call(t, s, "ping", `{}`); err != nil || got != `"pong"` {
		t.Errorf("ping after the junk = %s, %v", got, err)
	}
	select {
	case <-s.Done():
		t.Fatal("the session ended")
	default:
	}
	wantLog(t, logs, "level=WARN", "not JSON-RPC on stdout", `line="{\"foo\":1}"`, "mcp=toy")
	wantLog(t, logs, "not JSON-RPC on stdout", "line=[1,2]", "why=\"batch member 1", "count=2")
	if strings.Contains(logs.String(), "mcp server connection ended") {
		t.Errorf("the connection ended:\n%s", logs)
	}
}

func TestOnlyGarbageOnStdout(t *testing.T) {
	bin := toy(t)
	log, logs := newLog()
	_, err := startErr(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: bin, Args: []string{"-mode", "junk"}}, Log: log}, 2*time.Second)
	if err == nil {
		t.Fatal("a server that prints only junk started")
	}
	for _, want := range []string{"did not answer in time", `printed 2 line(s) on stdout that are not JSON-RPC, the first "Welcome to mcptoy! This is not JSON-RPC."`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	wantLog(t, logs, "mcp server did not start", "not JSON-RPC")
	if mcptest.Running(bin, "junk") {
		t.Error("the server is still running")
	}
}

func TestHangAtInitialize(t *testing.T) {
	bin := toy(t)
	log, logs := newLog()
	_, err := startErr(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: bin, Args: []string{"-mode", "hang"}}, Log: log}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") || !strings.Contains(err.Error(), "mcptoy: hanging at initialize") {
		t.Fatalf("error %v, want the deadline and the server's last stderr", err)
	}
	wantLog(t, logs, "mcp server did not start", "did not answer in time")
	if mcptest.Running(bin, "hang") {
		t.Error("the server is still running")
	}
}

func TestExitsAtStart(t *testing.T) {
	_, err := startErr(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t), Args: []string{"-mode", "exit"}}}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "cannot open the database") {
		t.Fatalf("error %v, want the exit status and the server's stderr", err)
	}
}

func TestInvalidToolSchema(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t), Args: []string{"-mode", "badschema"}}, Log: log})
	if n := names(s); strings.Contains(n, "broken") || strings.Contains(n, "choice") || !strings.Contains(n, "add") {
		t.Errorf("services %s: want add, and neither broken nor choice", n)
	}
	wantLog(t, logs, "level=WARN", "an MCP tool is left out", "mcp=toy", "tool=broken", `type \"strng\" is not a JSON Schema type`)
	wantLog(t, logs, "an MCP tool is left out", "tool=choice", "oneOf with 2 alternatives")
	if lo := s.Status().LeftOut; len(lo) != 2 {
		t.Errorf("status left_out %+v", lo)
	}
}

// childProvider lends a Child to a registry, as the supervisor will.
type childProvider struct {
	id string
	supervise.Child
}

func (p childProvider) ID() string { return p.id }

func TestResultOverCap(t *testing.T) {
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}})
	log, logs := newLog()
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(childProvider{"mcp:toy", s}); err != nil {
		t.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{MaxResult: 1000, Log: log})
	out := d.Dispatch(context.Background(), voice.Call{CallID: "c1", Method: "big", Params: json.RawMessage(`{"n":100000}`)})
	if want := "result of big is 100002 bytes, over the 1000 bytes limit (services.max_result)"; out.Success || out.Error != want {
		t.Errorf("outcome %+v, want %q", out, want)
	}
	wantLog(t, logs, "call failed", "method=big", "over the 1000 bytes limit")
	// The host goes on serving, and validation happens before the server.
	if out := d.Dispatch(context.Background(), voice.Call{CallID: "c2", Method: "add", Params: json.RawMessage(`{"a":1,"b":2}`)}); !out.Success || string(out.Data) != `"3"` {
		t.Errorf("add after the big result: %+v", out)
	}
	if out := d.Dispatch(context.Background(), voice.Call{CallID: "c3", Method: "add", Params: json.RawMessage(`{"a":"x"}`)}); out.Success || !strings.Contains(out.Error, "invalid parameters for add") {
		t.Errorf("invalid params: %+v", out)
	}
}

// TestKillLeavesNothing: Kill ends the server's whole process group: here
// a shell and, below it, a server that outlives its stdin.
func TestKillLeavesNothing(t *testing.T) {
	bin := toy(t)
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: "sh", Args: []string{"-c", bin + " -mode stubborn -kill-test; true"}}})
	if !mcptest.Running(bin, "-kill-test") {
		t.Fatal("the server is not running")
	}
	s.Kill()
	<-s.Done()
	if mcptest.Running(bin, "-kill-test") {
		t.Error("the server runs after Kill")
	}
	if _, err := call(t, s, "ping", `{}`); !errors.Is(err, supervise.ErrGone) {
		t.Errorf("call after Kill: %v, want ErrGone", err)
	}
	s.Kill() // again: nothing happens
}

func TestServerDies(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}, Log: log})
	syscall.Kill(s.Info().PID, syscall.SIGKILL)
	<-s.Done()
	if _, err := call(t, s, "ping", `{}`); !errors.Is(err, supervise.ErrGone) {
		t.Errorf("call after the server died: %v, want ErrGone", err)
	}
	wantLog(t, logs, "level=WARN", "mcp server connection ended", "exit=\"signal: killed\"")
}

// TestServerDiesDuringACall: a call whose server exits under it fails
// with ErrGone (the supervisor then restarts the server).
func TestServerDiesDuringACall(t *testing.T) {
	log, logs := newLog()
	s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: toy(t)}, Log: log})
	if _, err := call(t, s, "crash", `{}`); !errors.Is(err, supervise.ErrGone) {
		t.Errorf("call during which the server exited: %v, want ErrGone", err)
	}
	<-s.Done()
	wantLog(t, logs, "mcp server connection ended", "exit=\"exit status 2\"")
	wantLog(t, logs, "mcptoy: crashing", "stream=stderr")
}

func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  mcpclient.ServerConfig
		want string
	}{
		{mcpclient.ServerConfig{}, "neither command"},
		{mcpclient.ServerConfig{Command: "x", URL: "http://a"}, "both command and url"},
		{mcpclient.ServerConfig{Type: "sse"}, `type is "sse" but url is empty`},
		{mcpclient.ServerConfig{Type: "carrier-pigeon", URL: "http://a"}, `type "carrier-pigeon" is not one of`},
	} {
		if _, err := mcpclient.NewStarter(mcpclient.Options{Name: "x", Server: c.cfg}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestServerDiesWithTheHost: a host killed with SIGKILL (no chance to
// clean up) takes its stdio MCP servers with it (Pdeathsig).
func TestServerDiesWithTheHost(t *testing.T) {
	bin := toy(t)
	host := exec.Command(testbin.Build(t, "./host/mcpclient/testdata/minihost"), bin, "-mode", "stubborn", "-pdeathsig-test")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		host.Process.Kill()
		host.Wait()
		t.Fatalf("minihost: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if pid == 0 || !mcptest.Running(bin, "-pdeathsig-test") {
		t.Fatalf("the server is not running (pid %q)", line)
	}
	host.Process.Kill()
	host.Wait()
	eventually(t, "the server to die with its host", func() bool { return !mcptest.Running(bin, "-pdeathsig-test") })
}
