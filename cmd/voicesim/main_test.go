package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// TestDrivenByAPlainClient runs the real voicesim binary and drives it with a
// bare TCP client: auth, register, a text turn, and a console-triggered MCP call.
func TestDrivenByAPlainClient(t *testing.T) {
	bin := testbin.Build(t, "./cmd/voicesim")
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--pace=false", "--reply-duration", "120ms")
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	stderr := new(testbin.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdoutPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(prefix string) string {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("voicesim ended before printing %q; stderr:\n%s", prefix, stderr.String())
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("voicesim did not print %q", prefix)
			}
		}
	}
	addr := strings.Fields(strings.TrimPrefix(expect("voicesim listening on "), "voicesim listening on "))[0]

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	// Written by hand, as nc would send them.
	fmt.Fprint(conn, "##START\x0100000000[0000]dev-token##mode:manual####END")
	fmt.Fprint(conn, "##START\x06mcp00001[0000]"+`{"type":"register","data":{"services":{"get_current_time":{"description":"Get current time","parameters":{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"]}}}}}}}`+"##END")
	fmt.Fprint(conn, "##START\x04task12340000Hello there##END##START\x03task12340001##END")

	dec := voice.NewDecoder(conn)
	var reply []string
	for {
		f, err := dec.Decode()
		if err != nil {
			t.Fatalf("%v; stderr:\n%s", err, stderr.String())
		}
		reply = append(reply, f.Type.String())
		if f.Type == voice.TypeText && string(f.Payload) != "You said: Hello there" {
			t.Fatalf("reply text %q", f.Payload)
		}
		if f.Type == voice.TypeEnd {
			break
		}
	}
	if got := strings.Join(reply, " "); got != "STATUS TEXT AUDIO AUDIO END" {
		t.Fatalf("reply frames: %s", got)
	}

	io.WriteString(stdin, "services\n")
	expect("1 services registered")
	io.WriteString(stdin, `call get_current_time {"format":"simple"}`+"\n")
	f, err := dec.Decode()
	if err != nil || f.Type != voice.TypeMCP {
		t.Fatalf("%v %v", f, err)
	}
	call := must(voice.ParseMCP(f.Payload)).(*voice.Call)
	if call.Method != "get_current_time" || string(call.Params) != `{"format":"simple"}` {
		t.Fatalf("%+v", call)
	}
	res, _ := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: call.CallID, Result: voice.Outcome{Success: true, Data: json.RawMessage(`"2025-01-22 14:30:25"`)}})
	voice.NewEncoder(conn).Encode(voice.MCPFrame(res))
	if l := expect("call get_current_time:"); l != `call get_current_time: success: "2025-01-22 14:30:25"` {
		t.Fatalf("console printed %q", l)
	}
	for _, want := range []string{`recv`, `TEXT task1234/0000 \"Hello there\"`, `AUTH 00000000/0000 token=****`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "dev-token") {
		t.Error("the log shows the token")
	}
}

func must(v any, err error) any {
	if err != nil {
		panic(err)
	}
	return v
}
