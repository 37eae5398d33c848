package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// endToEndParallel is how many end-to-end tests run at once unless
// -test.parallel says otherwise. Those marked t.Parallel mostly wait on
// real daemons (a reply, a timeout, a decoder in real time), so four at a
// time on two cores keeps `go test ./...` short (docs/testing.md). Tests
// that score audio as it arrives (the wake word, the echo room, PortAudio),
// measure the daemon or look at every process of the machine stay serial:
// Go runs them before the parallel ones, so nothing else of this package
// runs beside them.
const endToEndParallel = "4"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", endToEndParallel)
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// hostProc is a running `agenthost run` built with the testkit provider.
type hostProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	log    *testbin.Buffer
	dir    string
	config string // the config file
	sets   []string
	exited chan error
}

func startHost(t testing.TB, sim *voicetest.Server, sets ...string) *hostProc {
	t.Helper()
	return startHostEnv(t, sim, nil, sets...)
}

// startHostEnv is startHost with extra environment variables.
func startHostEnv(t testing.TB, sim *voicetest.Server, env []string, sets ...string) *hostProc {
	t.Helper()
	return startHostBin(t, testbinHost(t), sim, env, sets...)
}

// startHostBin is startHostEnv with a given host binary.
func startHostBin(t testing.TB, bin string, sim *voicetest.Server, env []string, sets ...string) *hostProc {
	t.Helper()
	dir := t.TempDir()
	sets = append([]string{
		"server.address=" + sim.Addr(), "plugins.runtime_dir=" + filepath.Join(dir, "run"), "plugins.dirs=" + filepath.Join(dir, "plugins"),
		"plugins.state_dir=" + filepath.Join(dir, "state"),
		"server.reconnect.base=20ms", "server.reconnect.cap=100ms", "log.level=debug", "audio.backend=none",
	}, sets...)
	args := []string{"run", "--config", filepath.Join(dir, "none.yaml")}
	os.WriteFile(filepath.Join(dir, "none.yaml"), []byte("# defaults\n"), 0o600)
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	d := startHostArgs(t, bin, args, dir, env...)
	d.sets = sets
	return d
}

// testbinHost is the host binary the end-to-end tests run.
func testbinHost(t testing.TB) string { return testbin.Build(t, "./cmd/agenthost", "testkit") }

// startHostArgs starts the host binary with args (which name the config
// file after --config) in dir.
func startHostArgs(t testing.TB, bin string, args []string, dir string, env ...string) *hostProc {
	t.Helper()
	d := &hostProc{t: t, log: &testbin.Buffer{}, dir: dir, config: args[2], exited: make(chan error, 1)}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(append(os.Environ(), "AGENTHOST_SERVER_TOKEN=e2e-secret-token"), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("host log:\n%s", d.log)
		}
		if strings.Contains(d.log.String(), "e2e-secret-token") {
			t.Error("the token reached the host's log")
		}
		if strings.Contains(d.log.String(), "panic:") && !strings.Contains(d.log.String(), "deliberate panic") {
			t.Error("the host log shows a panic")
		}
	})
	return d
}

// stop sends SIGTERM and returns the exit error (nil for status 0).
func (d *hostProc) stop() error {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		d.exited <- err
		return err
	case <-time.After(15 * time.Second):
		d.t.Fatal("the host did not exit within 15 s of SIGTERM")
		return nil
	}
}

// cli runs another agenthost subcommand against the same config.
func (d *hostProc) cli(args ...string) (string, error) {
	bin := testbin.Build(d.t, "./cmd/agenthost", "testkit")
	full := []string{args[0], "--config", d.config}
	for _, s := range d.sets {
		full = append(full, "--set", s)
	}
	out, err := exec.Command(bin, append(full, args[1:]...)...).CombinedOutput()
	return string(out), err
}

func newSim(t *testing.T, o voicetest.Options) *voicetest.Server {
	t.Helper()
	if o.ReplyDuration == 0 {
		o.ReplyDuration = 120 * time.Millisecond
	}
	s, err := voicetest.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func waitFor(t *testing.T, sim *voicetest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := sim.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// logShows waits until the host's log contains s.
func (d *hostProc) logShows(s string) {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(d.log.String(), s) {
		if time.Now().After(deadline) {
			d.t.Fatalf("the host log never showed %q", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func call(t *testing.T, sim *voicetest.Server, method, params string) voice.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := sim.Call(ctx, method, json.RawMessage(params))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

func registersOn(sim *voicetest.Server, conn int) int {
	n := 0
	for _, r := range sim.Received() {
		if r.Conn == conn && r.Frame.Type == voice.TypeMCP && strings.Contains(string(r.Frame.Payload), `"type":"register"`) {
			n++
		}
	}
	return n
}

func ready(t *testing.T, sim *voicetest.Server, conns int) {
	t.Helper()
	waitFor(t, sim, "registered", func() bool { return len(sim.Auths()) >= conns && registersOn(sim, sim.Connections()) == 1 })
}

func TestTextTurnAndCallEndToEnd(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{DisconnectDelay: 50 * time.Millisecond})
	d := startHost(t, sim)
	ready(t, sim, 1)
	if tok := sim.Auths()[0].Token; tok != "e2e-secret-token" {
		t.Fatalf("token %q", tok)
	}
	if out, err := d.cli("say", "What time is it?"); err != nil || !strings.Contains(out, "get_current_time says: ") {
		t.Fatalf("say: %v %s", err, out)
	}
	// The simulator asked get_current_time for the text and spoke the result.
	d.logShows("get_current_time says: ")
	if !regexp.MustCompile(`server text.*get_current_time says: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).MatchString(d.log.String()) {
		t.Fatalf("the spoken result is not a time")
	}
	out := call(t, sim, "get_current_time", `{"format":"detailed"}`)
	if !out.Success || !strings.Contains(string(out.Data), "UTC") {
		t.Fatalf("%+v", out)
	}
	if n := registersOn(sim, 1); n != 1 {
		t.Fatalf("%d registers on the connection, want 1", n)
	}
	if err := d.stop(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	var bye bool
	for _, r := range sim.Received() {
		bye = bye || string(r.Frame.Payload) == voice.StatusDisconnect
	}
	if !bye {
		t.Fatal("no ##DISCONNECT before exit")
	}
}

func TestServerDropsTheLinkMidCall(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim)
	ready(t, sim, 1)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := sim.Call(ctx, "testkit_slow", `{"ms":400}`)
		done <- err
	}()
	waitFor(t, sim, "the call to go out", func() bool {
		for _, r := range sim.Sent() {
			if strings.Contains(string(r.Frame.Payload), "testkit_slow") {
				return true
			}
		}
		return false
	})
	sim.Drop()
	if err := <-done; err == nil {
		t.Fatal("the dropped call got a result")
	}
	waitFor(t, sim, "reconnect, re-auth and re-register", func() bool { return len(sim.Auths()) == 2 && registersOn(sim, 2) == 1 })
	if out := call(t, sim, "testkit_echo", `{"text":"ok"}`); !out.Success || string(out.Data) != `"ok"` {
		t.Fatalf("%+v", out)
	}
	d.logShows("result of a call was lost")
}

func TestServerNeverAnswersAuth(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{Faults: voicetest.Faults{WithholdAuthAck: true}})
	d := startHost(t, sim)
	ready(t, sim, 1)
	if out := call(t, sim, "testkit_echo", `{"text":"hi"}`); !out.Success {
		t.Fatalf("%+v", out)
	}
	if sim.Connections() != 1 || strings.Contains(d.log.String(), "authentication failed") {
		t.Fatalf("the host gave up on a server that does not acknowledge AUTH")
	}
}

func TestWrongTokenIsReported(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{Token: "another"})
	d := startHost(t, sim)
	waitFor(t, sim, "two attempts", func() bool { return sim.Connections() >= 2 })
	d.logShows("authentication failed")
	if !strings.Contains(d.log.String(), "server.token") {
		t.Fatal("the error does not say what to do")
	}
}

func TestGarbageAndOversizedFrames(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "server.max_frame=4KiB")
	ready(t, sim, 1)
	for _, raw := range []string{
		"\x00\x01 noise before any frame ",
		"##START\x04big     0000" + strings.Repeat("x", 10000) + "##END",
		"##START\x06mcp00001[0000]{not json##END",
		"##START\x06mcp00001[0000]{\"type\":\"call\",\"data\":{\"call_id\":\"bad1\"}}##END",
		"##START\x0e000000000000??##END",
		"##START\x05000000000000##SOMETHING_NEW##END",
	} {
		if err := sim.Inject([]byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	// The half-readable call still gets its one result.
	waitFor(t, sim, "an answer to the malformed call", func() bool {
		for _, r := range sim.Received() {
			if strings.Contains(string(r.Frame.Payload), `"call_id":"bad1"`) && strings.Contains(string(r.Frame.Payload), `"success":false`) {
				return true
			}
		}
		return false
	})
	if out := call(t, sim, "get_current_time", `{}`); !out.Success {
		t.Fatalf("%+v", out)
	}
	// The log reaches the test through a pipe, after the answers the
	// simulator saw: wait for it.
	for _, want := range []string{"4096-byte limit", "skipped bytes outside any frame", "cannot read"} {
		d.logShows(want)
	}
	if sim.Connections() != 1 {
		t.Fatal("the host reconnected because of bad frames")
	}
}

func TestSimulatorFaultOptions(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]voicetest.Faults{
		"split writes":     {SplitWrites: 3},
		"coalesce":         {Coalesce: true},
		"bracketed seq":    {BracketedSeq: true},
		"unknown types":    {Unknown: true},
		"withhold replies": {WithholdReplies: true},
		"withhold ack":     {WithholdAuthAck: true},
		"drop after 4":     {DropAfter: 4}, // AUTH, register, the PING after connecting, the turn's first frame
	} {
		t.Run(name, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{Faults: f})
			d := startHost(t, sim)
			ready(t, sim, 1)
			if f.DropAfter > 0 {
				d.cli("say", "--no-wait", "hello") // its first frame: the server drops the link
				waitFor(t, sim, "a reconnect", func() bool { return len(sim.Auths()) >= 2 && registersOn(sim, sim.Connections()) == 1 })
				return
			}
			if out := call(t, sim, "testkit_echo", `{"text":"ab","count":2}`); !out.Success || string(out.Data) != `"abab"` {
				t.Fatalf("%+v", out)
			}
			if out, err := d.cli("say", "--no-wait", "hello"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			if !f.WithholdReplies {
				d.logShows("You said: hello")
			}
			if sim.Connections() != 1 {
				t.Fatalf("%d connections", sim.Connections())
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	startHost(t, sim, "services.max_result=64KiB")
	ready(t, sim, 1)
	for _, tc := range []struct{ method, params, want string }{
		{"testkit_echo", `{}`, `missing`},
		{"testkit_echo", `{"text":5}`, `text`},
		{"testkit_echo", `{"text":"a","count":"two"}`, `count`},
		{"testkit_echo", `{"text":"a","mode":"c"}`, `mode`},
		{"testkit_echo", `{"text":"a","count":0}`, `count`},
		{"testkit_echo", `{"text":"a","count":6}`, `count`},
		{"testkit_echo", `{"text":""}`, `text`},
		{"testkit_echo", `{"text":"` + strings.Repeat("a", 21) + `"}`, `text`},
		{"no_such_service", `{}`, `unknown service "no_such_service"`},
		{"testkit_panic", `{}`, `internal error`},
		{"testkit_hang", `{}`, `did not answer within 300ms`},
		{"testkit_big", `{}`, `over the 64 KiB limit`},
	} {
		out := call(t, sim, tc.method, tc.params)
		if out.Success || !strings.Contains(out.Error, tc.want) {
			t.Errorf("%s %s: got %+v, want an error with %q", tc.method, tc.params, out, tc.want)
		}
	}
	if out := call(t, sim, "testkit_echo", `{"text":"still","count":1}`); !out.Success {
		t.Fatalf("the host stopped serving: %+v", out)
	}
}

func Test200ConcurrentCalls(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	startHost(t, sim, "services.max_in_flight=256", "services.max_in_flight_per_provider=256")
	ready(t, sim, 1)
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("n%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := sim.Call(ctx, "testkit_echo", json.RawMessage(`{"text":"`+text+`"}`))
			if err != nil || !out.Success || string(out.Data) != `"`+text+`"` {
				errs <- fmt.Sprintf("%s: %+v %v", text, out, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
