package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/host/builtin"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// notes is a small provider: add_note echoes its text; weather answers an
// object.
type notes struct{ names []string }

func (notes) ID() string { return "plugin:notes" }
func (n notes) Services() []services.Service {
	var out []services.Service
	for _, name := range n.names {
		switch name {
		case "add_note":
			out = append(out, services.Service{Name: name, Description: "Adds a note.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"]}`)})
		case "weather":
			out = append(out, services.Service{Name: name, Description: "The weather."}) // no schema: the registry's default
		default:
			out = append(out, services.Service{Name: name, Description: name, Parameters: json.RawMessage(`{"properties":{}}`)})
		}
	}
	return out
}
func (notes) Call(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if method == "weather" {
		return json.RawMessage(`{"temperature":21.5}`), nil
	}
	var p struct{ Text string }
	json.Unmarshal(params, &p)
	return json.Marshal("noted: " + p.Text)
}

var fixed = time.Date(2025, 1, 22, 14, 30, 25, 0, time.UTC)

func setup(t *testing.T) (*services.Registry, *mcpserver.Server, *testbin.Buffer) {
	t.Helper()
	r := services.NewRegistry(services.RegistryOptions{})
	if err := r.Put(builtin.New(func() time.Time { return fixed })); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(notes{[]string{"add_note", "weather"}}); err != nil {
		t.Fatal(err)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{})
	logs := &testbin.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := mcpserver.New(mcpserver.RegistryCatalog(r), mcpserver.CallerFunc(func(ctx context.Context, svc string, params json.RawMessage) voice.Outcome {
		return d.Dispatch(ctx, voice.Call{Method: svc, Params: params})
	}), mcpserver.Options{Version: "test", Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, s, logs
}

// stdioClient connects a go-sdk client to ServeStdio through pipes.
func stdioClient(t *testing.T, s *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cin, sout := io.Pipe()
	sin, cout := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(ctx, sin, sout); sout.Close() }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: cin, Writer: cout}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The server's end first: a client that hangs up while the server
		// writes (a list_changed notice) fails that write, which is not
		// what these tests are about.
		cancel()
		cs.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, tool := range res.Tools {
		n = append(n, tool.Name)
	}
	return strings.Join(n, ",")
}

func callTool(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestToolsAndCalls(t *testing.T) {
	_, s, _ := setup(t)
	cs := stdioClient(t, s, nil)
	if got := toolNames(t, cs); got != "add_note,get_current_time,weather" {
		t.Errorf("tools %s", got)
	}
	res, _ := cs.ListTools(context.Background(), nil)
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		if tool.Name == "add_note" && string(b) != `{"properties":{"text":{"minLength":1,"type":"string"}},"required":["text"],"type":"object"}` {
			t.Errorf("add_note's schema %s", b)
		}
		if tool.Name == "weather" && string(b) != `{"type":"object"}` {
			t.Errorf("weather's schema %s", b)
		}
	}
	if r := callTool(t, cs, "get_current_time", `{"format":"simple"}`); r.IsError || text(r) != "2025-01-22 14:30:25" || r.StructuredContent != nil {
		t.Errorf("get_current_time: %+v %q", r, text(r))
	}
	if r := callTool(t, cs, "add_note", `{"text":"milk"}`); r.IsError || text(r) != "noted: milk" {
		t.Errorf("add_note: %q", text(r))
	}
	r := callTool(t, cs, "weather", `{}`)
	b, _ := json.Marshal(r.StructuredContent)
	if r.IsError || text(r) != `{"temperature":21.5}` || string(b) != `{"temperature":21.5}` {
		t.Errorf("weather: %q, structured %s", text(r), b)
	}
	// The host's validation answers, as an error result with its message.
	if r := callTool(t, cs, "add_note", `{"text":""}`); !r.IsError || text(r) != "invalid parameters for add_note: text: must be at least 1 character long (got 0)" {
		t.Errorf("invalid params: %+v %q", r.IsError, text(r))
	}
	if r := callTool(t, cs, "get_current_time", `{"format":"fancy"}`); !r.IsError || !strings.Contains(text(r), `must be one of "simple", "detailed"`) {
		t.Errorf("enum: %q", text(r))
	}
}

// TestListChanged: a change of the registry's set reaches a connected
// client as tools/list_changed, and the new list has the change.
func TestListChanged(t *testing.T) {
	r, s, _ := setup(t)
	changed := make(chan struct{}, 10)
	cs := stdioClient(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if err := r.Put(notes{[]string{"add_note", "weather", "list_notes"}}); err != nil {
		t.Fatal(err)
	}
	<-changed
	if got := toolNames(t, cs); got != "add_note,get_current_time,list_notes,weather" {
		t.Errorf("after the change: %s", got)
	}
	r.Remove("plugin:notes")
	<-changed
	if got := toolNames(t, cs); got != "get_current_time" {
		t.Errorf("after the removal: %s", got)
	}
}

func serveHTTP(t *testing.T, s *mcpserver.Server, o mcpserver.HTTPOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + mcpserver.Path
}

// headers adds fixed headers to a client's requests.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(t *testing.T, url string, h headers) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: h}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestHTTPToken(t *testing.T) {
	_, s, logs := setup(t)
	url := serveHTTP(t, s, mcpserver.HTTPOptions{Token: "s3cret-token", Log: slog.New(slog.NewTextHandler(logs, nil))})
	for name, h := range map[string]headers{"none": {}, "wrong": {"Authorization": "Bearer nope"}, "basic": {"Authorization": "Basic s3cret-token"}} {
		if _, err := httpClient(t, url, h); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("%s: %v, want Unauthorized", name, err)
		}
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "mcp.serve.token") {
		t.Errorf("without a token: %d %q, want 401 naming the setting mcp.serve.token", resp.StatusCode, body)
	}
	cs, err := httpClient(t, url, headers{"Authorization": "Bearer s3cret-token"})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, cs); got != "add_note,get_current_time,weather" {
		t.Errorf("tools %s", got)
	}
	if r := callTool(t, cs, "add_note", `{"text":"eggs"}`); text(r) != "noted: eggs" {
		t.Errorf("add_note over HTTP: %q", text(r))
	}
	if strings.Contains(logs.String(), "s3cret-token") {
		t.Error("the token reached the log")
	}
	if !strings.Contains(logs.String(), "refused an MCP request without the right bearer token") {
		t.Errorf("no log line for the refused requests:\n%s", logs)
	}
}

func TestHTTPOrigin(t *testing.T) {
	_, s, logs := setup(t)
	url := serveHTTP(t, s, mcpserver.HTTPOptions{AllowedOrigins: []string{"https://app.example"}, Log: slog.New(slog.NewTextHandler(logs, nil))})
	for _, origin := range []string{"", "http://localhost:6274", "http://127.0.0.1:3000", "http://[::1]", "https://app.example"} {
		h := headers{}
		if origin != "" {
			h["Origin"] = origin
		}
		if _, err := httpClient(t, url, h); err != nil {
			t.Errorf("origin %q refused: %v", origin, err)
		}
	}
	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "null"} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %q: status %d, want 403", origin, resp.StatusCode)
		}
	}
	if !strings.Contains(logs.String(), "refused an MCP request from a foreign origin") {
		t.Errorf("no log line for the refused origin:\n%s", logs)
	}
}

// TestRefusedRequestsAreAggregated: a flood of refused requests (no token,
// a foreign origin) makes a line or two per kind, not one per request; the
// lines count the refusals they stand for.
func TestRefusedRequestsAreAggregated(t *testing.T) {
	const noToken, foreign = 500, 300
	_, s, _ := setup(t)
	logs := &testbin.Buffer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, ln, mcpserver.HTTPOptions{Token: "s3cret-token", Log: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	url := "http://" + ln.Addr().String() + mcpserver.Path
	c := &http.Client{Transport: &http.Transport{}}
	send := func(origin string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range noToken {
		send("")
	}
	for range foreign {
		send("https://evil.example")
	}
	c.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	repeated := regexp.MustCompile(`repeated=(\d+)`)
	for msg, want := range map[string]int{
		"refused an MCP request without the right bearer token": noToken,
		"refused an MCP request from a foreign origin":          foreign,
	} {
		lines, total := 0, 0
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, msg) {
				continue
			}
			lines++
			if m := repeated.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				total += n // a count line stands for the lines it held back
			} else {
				total++
			}
		}
		if lines < 1 || lines > 3 || total != want {
			t.Errorf("%d refusals (%s) made %d log lines standing for %d, want 1 to 3 lines standing for %d", want, msg, lines, total, want)
		}
	}
	if strings.Contains(logs.String(), "s3cret-token") {
		t.Error("the token reached the log")
	}
}

// TestHTTPSessionsBounded: MaxSessions sessions open, one more is refused
// naming mcp.serve.max_sessions; once they sent nothing for SessionTimeout
// they are closed and a new one opens.
func TestHTTPSessionsBounded(t *testing.T) {
	_, s, _ := setup(t)
	url := serveHTTP(t, s, mcpserver.HTTPOptions{MaxSessions: 3, SessionTimeout: 300 * time.Millisecond})
	for i := range 3 {
		if _, err := httpClient(t, url, headers{}); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	if _, err := httpClient(t, url, headers{}); err == nil {
		t.Error("a fourth session was opened")
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "mcp.serve.max_sessions") {
		t.Errorf("a fourth session: %d %q, want 503 naming mcp.serve.max_sessions", resp.StatusCode, body)
	}
	// A session is idle for SessionTimeout between its opening and its
	// tools/list too: on a busy machine it may time out in between, and the
	// next one is tried.
	deadline := time.Now().Add(60 * time.Second)
	for {
		cs, err := httpClient(t, url, headers{})
		if err == nil {
			var res *mcp.ListToolsResult
			if res, err = cs.ListTools(context.Background(), nil); err == nil {
				var names []string
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
				}
				if got := strings.Join(names, ","); got != "add_note,get_current_time,weather" {
					t.Errorf("tools %s", got)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session after the others timed out: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := 0
	for range s.MCPServer().Sessions() {
		n++
	}
	if n > 3 {
		t.Errorf("%d sessions open, over MaxSessions (3)", n)
	}
}

// failSignal passes writes to a real pipe and says when one failed.
type failSignal struct {
	io.Writer
	failed chan struct{}
	once   sync.Once
}

func (f *failSignal) Write(p []byte) (int, error) {
	n, err := f.Writer.Write(p)
	if err != nil {
		f.once.Do(func() { close(f.failed) })
	}
	return n, err
}

// TestAClientThatHangsUpMidNoticeEndsTheSessionCleanly: a desktop client
// that closes its end while the server writes a list_changed notice has
// ended the session, as when it closes between messages; ServeStdio
// returned "io: read/write on closed pipe" for it (seen in TestListChanged).
// The client is raw JSON-RPC, so that nothing but the test closes a pipe.
func TestAClientThatHangsUpMidNoticeEndsTheSessionCleanly(t *testing.T) {
	r, s, _ := setup(t)
	cin, sout := io.Pipe()
	sin, cout := io.Pipe()
	out := &failSignal{Writer: sout, failed: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(context.Background(), sin, out) }()
	replies := bufio.NewReader(cin)
	send := func(msg string) {
		if _, err := io.WriteString(cout, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if line, err := replies.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if line, err := replies.ReadString('\n'); err != nil || !strings.Contains(line, `"id":2`) {
		t.Fatalf("tools/list: %q, %v", line, err)
	}
	cin.Close() // the client stops reading: the next notice fails
	if err := r.Put(notes{[]string{"add_note"}}); err != nil {
		t.Fatal(err)
	}
	<-out.failed
	cout.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeStdio after the client hung up: %v, want a clean end", err)
	}
}
