package httpserve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/internal/httpserve"
	"github.com/agenthost/agenthost/internal/testbin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs Serve on a loopback port until the test ends, and returns the
// address and a function that ends it early (and returns Serve's error).
func serve(t *testing.T, h http.Handler, o httpserve.Options) (string, func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpserve.Serve(ctx, ln, h, o) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), stop
}

// dialFrom connects to addr from the loopback address ip (127.0.0.x), as
// a client on another machine would from its own address.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer waits (15 s at most) for the server to close c, reading
// what it still sends (an answer to a request cut short).
func closedByServer(c net.Conn, br *bufio.Reader) error {
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("still open after 15 s")
	}
	return nil
}

// TestIdleConnectionsAreClosed: a keep-alive connection that sends no
// second request is closed after IdleTimeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		httpserve.Options{Name: "test", IdleTimeout: 200 * time.Millisecond})
	c := dialFrom(t, "127.0.0.1", addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := closedByServer(c, br); err != nil {
		t.Errorf("an idle keep-alive connection (IdleTimeout 200ms): %v", err)
	}
}

// TestATricklingBodyIsCut: a request whose body comes a byte at a time
// loses its connection after BodyTimeout, and the handler's read fails.
func TestATricklingBodyIsCut(t *testing.T) {
	readErr := make(chan error, 1)
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), httpserve.Options{Name: "test", BodyTimeout: 300 * time.Millisecond})
	c := dialFrom(t, "127.0.0.1", addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)
	defer c.Close() // frees the handler when the deadline never comes
	select {
	case err := <-readErr:
		if err == nil {
			t.Error("the handler read the whole trickled body")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a body trickling in was still being read after 15 s (BodyTimeout 300ms)")
	}
	if err := closedByServer(c, bufio.NewReader(c)); err != nil {
		t.Errorf("the connection of a trickled body: %v", err)
	}
}

// stream answers n lines, one every 100 ms, after reading the body; it
// stops early when the request's context ends.
func stream(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range n {
			fmt.Fprintf(w, "data: %d\n\n", i)
			rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func countEvents(t *testing.T, resp *http.Response, err error) int {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	return n
}

// TestStreamsOutliveTheDeadlines: a response stream (SSE, on GET or after a
// POST's body) lasting far longer than every deadline is not cut.
func TestStreamsOutliveTheDeadlines(t *testing.T) {
	const events = 12 // 1.2 s, against deadlines of 150 ms
	d := 150 * time.Millisecond
	addr, _ := serve(t, stream(events), httpserve.Options{Name: "test", ReadHeaderTimeout: d, BodyTimeout: d, IdleTimeout: d, WriteTimeout: d})
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://" + addr + "/")
	if n := countEvents(t, resp, err); n != events {
		t.Errorf("GET stream: %d events, want %d", n, events)
	}
	resp, err = c.Post("http://"+addr+"/", "application/json", strings.NewReader(`{"a":1}`))
	if n := countEvents(t, resp, err); n != events {
		t.Errorf("POST stream: %d events, want %d", n, events)
	}
}

// TestConnectionsAreCapped: one client address gets MaxConnsPerClient
// connections, the rest are refused with a 503 that names the setting;
// all clients together get MaxConns, and a connection over that waits
// for a free slot. The refusals make few log lines.
func TestConnectionsAreCapped(t *testing.T) {
	logs := &testbin.Buffer{}
	var active, peak atomic.Int64
	var mu sync.Mutex
	served := map[string]int{} // client address → requests in the handler
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		served[ip]++
		mu.Unlock()
		select {
		case <-release:
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	})
	addr, stop := serve(t, h, httpserve.Options{Name: "the test endpoint", MaxConns: 6, MaxConnsPerClient: 3,
		MaxConnsSetting: "test.max_connections", MaxConnsPerClientSetting: "test.max_connections_per_client",
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	servedFrom := func(ip string) int {
		mu.Lock()
		defer mu.Unlock()
		return served[ip]
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	request := func(ip string) net.Conn {
		c := dialFrom(t, ip, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		return c
	}

	// One address: 3 in, 7 refused.
	var refused, refusedNamed atomic.Int64
	var wg sync.WaitGroup
	var first []net.Conn
	for range 10 {
		c := request("127.0.0.1")
		first = append(first, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // closed when the test ends (or, today, never refused)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusServiceUnavailable {
				refused.Add(1)
				if strings.Contains(string(b), "test.max_connections_per_client") {
					refusedNamed.Add(1)
				}
			}
		}()
	}
	waitFor("every connection of 127.0.0.1 to be served or refused", func() bool { return int64(servedFrom("127.0.0.1"))+refused.Load() >= 10 })
	if n := servedFrom("127.0.0.1"); n != 3 {
		t.Errorf("one client address has %d requests served at once, want 3 (MaxConnsPerClient)", n)
	}
	if refused.Load() != refusedNamed.Load() {
		t.Errorf("%d of %d refusals name test.max_connections_per_client", refusedNamed.Load(), refused.Load())
	}

	// Two more addresses fill MaxConns; one more waits for a free slot.
	var others []net.Conn
	for _, ip := range []string{"127.0.0.2", "127.0.0.2", "127.0.0.2"} {
		others = append(others, request(ip))
	}
	waitFor("127.0.0.2's requests", func() bool { return servedFrom("127.0.0.2") == 3 })
	late := request("127.0.0.3")
	first[0].Close() // frees one of 127.0.0.1's slots (if it had one)
	for _, c := range first[1:] {
		c.Close()
	}
	waitFor("127.0.0.3's request once a slot is free", func() bool { return servedFrom("127.0.0.3") == 1 })
	if p := peak.Load(); p > 6 {
		t.Errorf("%d requests were served at once, over MaxConns (6)", p)
	}
	close(release)
	for _, c := range append(others, late) {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.Close()
	}
	wg.Wait()
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if n := strings.Count(logs.String(), "test.max_connections_per_client"); n < 1 || n > 2 {
		t.Errorf("%d log lines about refused connections, want 1 or 2 (one, then a count):\n%s", n, logs)
	}
	if !regexp.MustCompile(`setting=test\.max_connections(\s|$)`).MatchString(logs.String()) {
		t.Errorf("no log line says the connections reached test.max_connections:\n%s", logs)
	}
}

// TestWarnsBeyondLoopback: an address beyond loopback draws the listener's
// warning; a loopback one does not.
func TestWarnsBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:0", false}, {":0", true}} {
		logs := &testbin.Buffer{}
		ln, err := net.Listen("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- httpserve.Serve(ctx, ln, http.NotFoundHandler(), httpserve.Options{Name: "the test endpoint",
				ExposedWarning: "the test endpoint listens beyond this machine", Log: slog.New(slog.NewTextHandler(logs, nil))})
		}()
		c, err := net.Dial("tcp", ln.Addr().String()) // Serve has started once it answers
		if err == nil {
			io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
			io.ReadAll(c)
			c.Close()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if got := strings.Contains(logs.String(), "listens beyond this machine"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v:\n%s", tc.addr, got, tc.warn, logs)
		}
	}
}

// TestForeignHostHeadersAreRefused: a request that reached a loopback
// address naming another host (a DNS-rebinding page in a browser) is
// refused with 403; loopback names and addresses are answered.
func TestForeignHostHeadersAreRefused(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		httpserve.Options{Name: "test"})
	_, port, _ := net.SplitHostPort(addr)
	for host, want := range map[string]int{
		"evil.example": http.StatusForbidden, "evil.example:" + port: http.StatusForbidden, "10.0.0.1:" + port: http.StatusForbidden,
		addr: http.StatusOK, "localhost:" + port: http.StatusOK, "[::1]:" + port: http.StatusOK, "127.0.0.1": http.StatusOK,
	} {
		c := dialFrom(t, "127.0.0.1", addr)
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("Host %s: %v", host, err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
}

// big answers 64 KiB a request: a peer that does not read fills the
// socket's buffers in a few requests.
var big = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Write(make([]byte, 64<<10))
})

// pipeline sends n requests on c at once, and never reads.
func pipeline(t *testing.T, c net.Conn, n int) {
	t.Helper()
	go func() {
		req := []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		for range n {
			if _, err := c.Write(req); err != nil {
				return
			}
		}
	}()
}

// get makes one request on a new connection from ip, and says how it went
// (60 s at most: a guard against a test that would hang, not a figure).
func get(ip, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// closedEventually waits (60 s at most, a guard) for the server to close
// c: reading it ends in EOF or a reset.
func closedEventually(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("still open after 60 s")
	}
	return nil
}

// TestANonReadingClientGivesWayToOthers: a client whose connections fill
// every slot with pipelined requests it never reads does not keep a
// client on another address waiting: that one is answered, and the
// non-reader's connections are closed.
func TestANonReadingClientGivesWayToOthers(t *testing.T) {
	addr, _ := serve(t, big, httpserve.Options{Name: "test", MaxConns: 2, MaxConnsPerClient: 2})
	var stuck []net.Conn
	for range 2 {
		c := dialFrom(t, "127.0.0.2", addr)
		pipeline(t, c, 20000)
		stuck = append(stuck, c)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- get("127.0.0.3", addr) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a client beside the non-reader: %v", err)
		}
	}
	for i, c := range stuck {
		if err := closedEventually(c); err != nil {
			t.Errorf("the non-reader's connection %d: %v", i, err)
		}
	}
}

// TestPipelinedRequestsAreBoundedPerConnection: a connection that pipelines
// 2,000 requests and reads nothing has at most 100 of them answered
// before the server closes it.
func TestPipelinedRequestsAreBoundedPerConnection(t *testing.T) {
	var served atomic.Int64
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, "ok")
	}), httpserve.Options{Name: "test"})
	c := dialFrom(t, "127.0.0.2", addr)
	pipeline(t, c, 2000)
	if err := closedEventually(c); err != nil {
		t.Errorf("the connection with 2,000 requests pipelined (%d answered): %v", served.Load(), err)
	}
	if n := served.Load(); n > 100 {
		t.Errorf("%d pipelined requests answered on one connection, want at most 100", n)
	}
}

// TestAStalledWriteIsCut: an answer that its client never reads loses its
// connection (after the write deadline, 10 s by default), and the
// handler's write fails; it does not hold the slot for good.
func TestAStalledWriteIsCut(t *testing.T) {
	wrote := make(chan error, 1)
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64<<10)
		for {
			if _, err := w.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
	}), httpserve.Options{Name: "test"})
	c := dialFrom(t, "127.0.0.2", addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	defer c.Close() // frees the handler when the deadline never comes
	select {
	case <-wrote:
	case <-time.After(60 * time.Second):
		t.Fatal("an answer nobody reads was still being written after 60 s")
	}
	if err := closedEventually(c); err != nil {
		t.Errorf("the connection of a stalled answer: %v", err)
	}
}

// TestIdleConnectionsGiveWayToANewOne: when idle keep-alive connections
// hold every slot, a new connection from another address is answered at
// once (the longest idle one is closed), not after the idle timeout.
func TestIdleConnectionsGiveWayToANewOne(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		httpserve.Options{Name: "test", MaxConns: 2, IdleTimeout: 10 * time.Minute})
	var idle []net.Conn
	for range 2 {
		c := dialFrom(t, "127.0.0.2", addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		idle = append(idle, c)
	}
	if err := get("127.0.0.3", addr); err != nil {
		t.Fatalf("a new connection while idle ones held every slot: %v", err)
	}
	if err := closedEventually(idle[0]); err != nil {
		t.Errorf("the longest idle connection: %v", err)
	}
}

// TestARefusalIsAnsweredAfterTheRequest: a connection over
// MaxConnsPerClient is answered 503 once its request has come, not as
// soon as it is accepted: an HTTP client takes bytes that come before it
// wrote its request for an unsolicited answer and drops the connection
// (Go's: a POST then fails with EOF, not the 503 that says why).
func TestARefusalIsAnsweredAfterTheRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	addr, _ := serve(t, h, httpserve.Options{Name: "the test endpoint", MaxConnsPerClient: 1, Log: slog.New(slog.DiscardHandler)})
	held := dialFrom(t, "127.0.0.1", addr)
	io.WriteString(held, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	// The listener takes connections in turn: held is counted before c.
	c := dialFrom(t, "127.0.0.1", addr)
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, _ := c.Read(make([]byte, 1)); n > 0 {
		t.Fatal("a refused connection was answered before it sent its request")
	}
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the refused connection's request got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the refused connection's request got %s, want 503", resp.Status)
	}
}

// lanListener is a fake, named as such: a loopback listener whose
// connections say they reached lanIP, an address of the LAN. The tests
// may not use the machine's own interfaces, and only a LAN address shows
// how the endpoint answers a browser on another machine of the network.
type lanListener struct{ net.Listener }

var lanIP = net.ParseIP("192.0.2.10") // TEST-NET-1

func (l lanListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return lanConn{c}, nil
}

type lanConn struct{ net.Conn }

func (c lanConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: lanIP, Port: c.Conn.LocalAddr().(*net.TCPAddr).Port}
}

// serveLAN is serve on a lanListener.
func serveLAN(t *testing.T, h http.Handler, o httpserve.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpserve.Serve(ctx, lanListener{ln}, h, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// hostAnswer sends one GET naming host to addr and returns the status.
func hostAnswer(t *testing.T, addr, host string) int {
	t.Helper()
	c := dialFrom(t, "127.0.0.1", addr)
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("Host %s: %v", host, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestForeignHostHeadersAreRefusedBeyondLoopback: a request that reached
// an address of the LAN (metrics.listen :9100) naming another host, as a
// DNS-rebinding page in a browser of the network would, is refused with
// 403; one that names the address it reached, or this machine by a
// loopback name (through an SSH tunnel), or by the machine's host name or
// a name of the owner's, is answered.
func TestForeignHostHeadersAreRefusedBeyondLoopback(t *testing.T) {
	addr := serveLAN(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		httpserve.Options{Name: "test", Hosts: []string{"Speaker.LAN"}, HostsSetting: "test.hosts"})
	_, port, _ := net.SplitHostPort(addr)
	hostname, _ := os.Hostname()
	for host, want := range map[string]int{
		"evil.example": http.StatusForbidden, "evil.example:" + port: http.StatusForbidden, "10.0.0.1:" + port: http.StatusForbidden,
		"speaker.lan:" + port: http.StatusOK, "speaker.lan.:" + port: http.StatusOK, hostname + ":" + port: http.StatusOK,
		lanIP.String() + ":" + port: http.StatusOK, lanIP.String(): http.StatusOK,
		"localhost:" + port: http.StatusOK, "127.0.0.1:" + port: http.StatusOK, // an SSH tunnel's
	} {
		if got := hostAnswer(t, addr, host); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
}
