package sdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/procs"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/plugins/internal/plugintest"
	"github.com/agenthost/agenthost/plugins/sdk"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

const testPlugin = "./testdata/testplugin"

// envFakeHost makes the test binary act as a host that starts the plugin
// named by the variable, prints its PID and then waits to be killed.
const envFakeHost = "SDK_TEST_FAKE_HOST"

// envFakeHostDir is the fake host's temporary folder (the test removes it).
const envFakeHostDir = "SDK_TEST_FAKE_HOST_DIR"

func TestMain(m *testing.M) {
	if bin := os.Getenv(envFakeHost); bin != "" {
		fakeHost(bin)
		return
	}
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

func fakeHost(bin string) {
	t := &fakeT{}
	p := plugintest.Configured(t, bin, `{}`, plugintest.Options{})
	data, err := p.Call(context.Background(), "pid", nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("pid %s\n", data)
	select {}
}

func startTest(t *testing.T) *plugintest.Plugin {
	t.Helper()
	return plugintest.Configured(t, plugintest.Build(t, testPlugin), `{}`, plugintest.Options{})
}

func TestEndToEndCalls(t *testing.T) {
	p := startTest(t)
	ctx := context.Background()

	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range d.Services {
		names = append(names, s.Name)
	}
	if d.Name != "testplugin" || strings.Join(names, ",") != "echo,fail,panic,sleep,pid,log,fetch,greet" {
		t.Errorf("describe: %s %v", d.Name, names)
	}
	greet := d.Services[len(d.Services)-1]
	if want := `{"type":"object","properties":{"name":{"type":"string","description":"who to greet","minLength":1},"times":{"type":"integer","description":"how often","minimum":1,"maximum":3}},"required":["name"]}`; string(greet.Parameters) != want {
		t.Errorf("greet schema = %s", greet.Parameters)
	}

	if data, err := p.Call(ctx, "echo", json.RawMessage(`{"x":[1,2]}`)); err != nil || string(data) != `{"x":[1,2]}` {
		t.Errorf("echo: %s %v", data, err)
	}
	if data, err := p.Call(ctx, "greet", json.RawMessage(`{"name":"Ann","times":2}`)); err != nil || string(data) != `"Hello, Ann! Hello, Ann!"` {
		t.Errorf("greet: %s %v", data, err)
	}
	_, err = p.Call(ctx, "greet", json.RawMessage(`{"name":"","times":2}`))
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS || !strings.Contains(ce.Message, `at "name"`) {
		t.Errorf("greet with empty name: %v", err)
	}
	_, err = p.Call(ctx, "fail", nil)
	if ce, ok := pluginv1.AsCallError(err); !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_FAILED || ce.Message != "the answer is no" {
		t.Errorf("fail: %v", err)
	}

	// Reconfigure, and a rejected config.
	if err := p.Configure(ctx, json.RawMessage(`{"greeting":"Hi"}`)); err != nil {
		t.Fatal(err)
	}
	var cerr *pluginv1.ConfigError
	if err := p.Configure(ctx, json.RawMessage(`{"greting":"Yo"}`)); !errors.As(err, &cerr) || cerr.Message != `unknown option "greting"` {
		t.Errorf("typo in config: %v", err)
	}
	if data, _ := p.Call(ctx, "greet", json.RawMessage(`{"name":"Bo"}`)); string(data) != `"Hi, Bo!"` {
		t.Errorf("greet after reconfigure: %s", data)
	}
}

// A handler that panics gives an error result; the process keeps serving.
func TestPanicKeepsPluginAlive(t *testing.T) {
	p := startTest(t)
	ctx := context.Background()
	pid1, err := p.Call(ctx, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err = p.Call(ctx, "panic", nil)
		ce, ok := pluginv1.AsCallError(err)
		if !ok || ce.Kind != pluginv1.ErrorKind_ERROR_KIND_PANIC || ce.Message != "panic failed because of an internal error in plugin testplugin" {
			t.Fatalf("panic: %v", err)
		}
	}
	pid2, err := p.Call(ctx, "pid", nil)
	if err != nil || string(pid1) != string(pid2) {
		t.Errorf("after panics: pid %s then %s (%v)", pid1, pid2, err)
	}
	if p.GoPlugin.Exited() {
		t.Error("plugin process exited")
	}
	waitLog(p, "assignment to entry in nil map")
	logs := p.Logs()
	// go-plugin re-logs a plugin's JSON line with its fields in map order,
	// so service=panic may come before or after the stack.
	if !strings.Contains(logs, "[ERROR] host.testplugin: service handler panicked:") || !strings.Contains(logs, "service=panic") ||
		!strings.Contains(logs, "assignment to entry in nil map") {
		t.Errorf("the panic is not in the host log at ERROR level:\n%s", logs)
	}
}

// The host's deadline reaches the handler; the host sees DeadlineExceeded
// (a transport-level error, not a CallError) and the plugin keeps serving.
func TestDeadline(t *testing.T) {
	p := startTest(t)
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := p.Call(ctx, "sleep", nil)
		cancel()
		if _, isCallErr := pluginv1.AsCallError(err); isCallErr || status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("sleep past the deadline: %v", err)
		}
	}
	if _, err := p.Call(context.Background(), "pid", nil); err != nil {
		t.Errorf("after a deadline: %v", err)
	}
}

// Logging reaches the host through stderr with its level; stdout after the
// handshake does not disturb anything.
func TestLogsReachTheHost(t *testing.T) {
	p := startTest(t)
	if data, err := p.Call(context.Background(), "log", nil); err != nil || string(data) != `"ok"` {
		t.Fatalf("log: %s %v", data, err)
	}
	want := []string{
		"[DEBUG] host.testplugin: slog debug line: n=1",
		"[INFO]  host.testplugin: slog info line: n=2",
		"[WARN]  host.testplugin: slog warn line: n=3",
		"[ERROR] host.testplugin: slog error line: n=4",
		"[INFO]  host.testplugin: log package line",
		// After the handshake, go-plugin has swapped os.Stdout and os.Stderr
		// for its stdio stream (ClientConfig.SyncStdout/SyncStderr).
		"[stdout] stdout line after the handshake",
		"[stderr] raw stderr line",
	}
	// The levelled lines, raw stderr and stdout reach the host on separate
	// streams, in any order and each in its own time.
	for _, w := range want {
		if !waitLog(p, w) {
			t.Errorf("host log lacks %q", w)
		}
	}
	if _, err := p.Call(context.Background(), "pid", nil); err != nil {
		t.Errorf("after logging: %v", err)
	}
}

func TestRefusesToRunByHand(t *testing.T) {
	stdout, stderr, code := plugintest.RunByHand(t, plugintest.Build(t, testPlugin))
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, sdk.RefusalMessage+"\n") || !strings.Contains(stderr, "testplugin 0.0.1 offers: echo, fail, panic") {
		t.Errorf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
}

func TestInvalidSchemaRefusesToServe(t *testing.T) {
	bin := plugintest.Build(t, testPlugin)
	_, stderr, code := plugintest.RunByHand(t, bin, "badschema")
	if code != 1 || !strings.Contains(stderr, `agenthost plugin "testplugin" is invalid and will not start:`) || !strings.Contains(stderr, `service "broken": schema is not a valid JSON Schema`) {
		t.Errorf("by hand: exit %d, stderr %q", code, stderr)
	}
	p, err := plugintest.StartErr(t, bin, plugintest.Options{Args: []string{"badschema"}})
	if err == nil {
		t.Fatalf("started a plugin with a broken schema: %+v", p)
	}
}

// Anything printed to stdout before the handshake breaks the start.
func TestPrintBeforeHandshakeBreaksStart(t *testing.T) {
	_, err := plugintest.StartErr(t, plugintest.Build(t, testPlugin), plugintest.Options{Args: []string{"print-before"}})
	if err == nil {
		t.Fatal("start succeeded")
	}
}

// When the host dies without killing its plugin (SIGKILL, no Pdeathsig),
// the plugin notices its parent is gone and exits.
func TestPluginExitsWhenHostDies(t *testing.T) {
	bin := plugintest.Build(t, testPlugin)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(self, "-test.run=^$")
	host.Env = append(os.Environ(), envFakeHost+"="+bin, envFakeHostDir+"="+t.TempDir())
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		t.Fatalf("fake host said %q (%v)", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		t.Fatal(err)
	}
	if !procs.Alive(pid) {
		t.Fatalf("plugin %d is not running", pid)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()

	deadline := time.Now().Add(30 * time.Second) // a bound, not a timing assertion
	for procs.Alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("plugin %d still runs after its host died", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fakeT is enough of testing.TB for plugintest.Start in the fake host.
type fakeT struct{ testing.TB }

func (*fakeT) Helper()                   {}
func (*fakeT) Cleanup(func())            {}
func (*fakeT) TempDir() string           { return os.Getenv(envFakeHostDir) }
func (*fakeT) Failed() bool              { return false }
func (*fakeT) Logf(string, ...any)       {}
func (*fakeT) Fatalf(f string, a ...any) { fmt.Printf("error: "+f+"\n", a...); os.Exit(1) }
func (*fakeT) Fatal(a ...any)            { fmt.Println(append([]any{"error:"}, a...)...); os.Exit(1) }

// The guide's example (plugins/README.md) is testdata/hello, and it works.
func TestGuideExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/hello/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Fatal("plugins/README.md's example differs from testdata/hello/main.go; keep them the same")
	}

	p := plugintest.Configured(t, plugintest.Build(t, "./testdata/hello"), `{"greeting":"Servus"}`, plugintest.Options{})
	ctx := context.Background()
	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"name":{"type":"string","description":"Who to greet","minLength":1},"mood":{"type":"string","description":"How to sound","enum":["cheerful","calm"]}},"required":["name"]}`
	if len(d.Services) != 1 || string(d.Services[0].Parameters) != want {
		t.Errorf("say_hello schema = %s", d.Services[0].Parameters)
	}
	if data, err := p.Call(ctx, "say_hello", json.RawMessage(`{"name":"Ann","mood":"cheerful"}`)); err != nil || string(data) != `"Servus, Ann! Great to hear from you!"` {
		t.Errorf("say_hello: %s %v", data, err)
	}
	var cerr *pluginv1.ConfigError
	if err := p.Configure(ctx, json.RawMessage(`{"greting":"Hi"}`)); !errors.As(err, &cerr) || cerr.Message != `unknown option "greting"` {
		t.Errorf("typo: %v", err)
	}
	if data, _ := p.Call(ctx, "say_hello", json.RawMessage(`{"name":"Bo"}`)); string(data) != `"Servus, Bo."` {
		t.Errorf("after a rejected config: %s", data)
	}
	if !waitLog(p, "greeting: name=Ann") {
		t.Errorf("the slog line is not in the host log:\n%s", p.Logs())
	}
}

// waitLog waits (bounded) for the host log to contain s: the plugin's stderr
// lines reach the host's logger asynchronously.
func waitLog(p *plugintest.Plugin, s string) bool {
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.Logs(), s) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
