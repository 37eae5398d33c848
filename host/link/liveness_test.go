package link

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// sockopt reads an integer TCP-level (or socket-level) option of nc.
func sockopt(t *testing.T, nc net.Conn, level, opt int) int {
	t.Helper()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// TestTheSocketFailsFastOnADeadPath: with the default settings, written
// data that the server's TCP does not acknowledge for 10 s fails the
// connection (TCP_USER_TIMEOUT), and an idle connection is probed by TCP
// keepalive after 15 s, every 5 s, 3 times.
func TestTheSocketFailsFastOnADeadPath(t *testing.T) {
	f := run(t, voicetest.Options{}, nil)
	f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
	f.link.mu.Lock()
	nc := f.link.cur.nc
	f.link.mu.Unlock()
	for _, o := range []struct {
		name       string
		level, opt int
		want       int
	}{
		{"TCP_USER_TIMEOUT (ms)", unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 10000},
		{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE (s)", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 15},
		{"TCP_KEEPINTVL (s)", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 5},
		{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 3},
	} {
		if got := sockopt(t, nc, o.level, o.opt); got != o.want {
			t.Errorf("%s = %d, want %d", o.name, got, o.want)
		}
	}
}

// fast makes answers due within 300 ms.
func fast(s *config.Server) { s.Liveness.AnswerTimeout = config.Duration(300 * time.Millisecond) }

func pings(sim *voicetest.Server, conn int) int {
	n := 0
	for _, r := range sim.Received() {
		if r.Conn == conn && string(r.Frame.Payload) == voice.StatusPing {
			n++
		}
	}
	return n
}

// pongSeen waits until the link has read a PONG.
func pongSeen(t *testing.T, l *Link) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !l.pongSeen.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no PONG read")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestASilentServerIsDroppedWhenATurnStarts: the server goes silent (a
// black hole) and a turn starts: the PING it sends is not answered in
// time, the connection is dropped with a NoAnswerError, the link connects
// again and its state shows the outage.
func TestASilentServerIsDroppedWhenATurnStarts(t *testing.T) {
	f := run(t, voicetest.Options{}, fast)
	f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
	pongSeen(t, f.link)
	if n := pings(f.sim, 1); n != 1 {
		t.Fatalf("%d PINGs after connecting, want 1", n)
	}
	f.sim.BlackHole()
	a := f.link.Attend("a turn started")
	defer a.Release()
	select {
	case err := <-a.Answer():
		if !IsNoAnswer(err) || !strings.Contains(err.Error(), "after a turn started") || !strings.Contains(err.Error(), "server.liveness.answer_timeout") {
			t.Fatalf("the answer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no verdict on the PING")
	}
	f.rec.wait(t, "down, then up again", func() bool { return len(f.rec.downs) == 1 && len(f.rec.ups) == 2 })
	if err := f.rec.downs[0]; !IsNoAnswer(err) {
		t.Fatalf("down: %v", err)
	}
	st := f.link.State()
	if st.State != StateUp || st.Outages != 1 || st.ByReason[ReasonNoAnswer] != 1 || !strings.Contains(st.LastOutage, "did not answer") || st.LastOutageAt == nil {
		t.Fatalf("state %+v", st)
	}
}

// TestAnIdleLinkIsDroppedWhenTheKeepalivePingGoesUnanswered: no turn, the
// server falls silent; the keepalive PING's answer is due like any other.
func TestAnIdleLinkIsDroppedWhenTheKeepalivePingGoesUnanswered(t *testing.T) {
	f := run(t, voicetest.Options{}, func(s *config.Server) {
		fast(s)
		s.Keepalive = config.Duration(500 * time.Millisecond)
	})
	pongSeen(t, f.link)
	f.sim.BlackHole()
	f.rec.wait(t, "down", func() bool { return len(f.rec.downs) == 1 })
	if err := f.rec.downs[0]; !IsNoAnswer(err) || !strings.Contains(err.Error(), whyIdle) {
		t.Fatalf("down: %v", err)
	}
}

// TestAnAttendedLinkAsksWhileTheServerIsSilent: while a reply is awaited
// from a server that answers PINGs but says nothing else, the link asks
// again after each silence and stays up; once released, it stops asking.
func TestAnAttendedLinkAsksWhileTheServerIsSilent(t *testing.T) {
	f := run(t, voicetest.Options{Faults: voicetest.Faults{IgnoreTurns: true}}, fast)
	f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
	a := f.link.Attend("a turn started")
	if err := <-a.Answer(); err != nil {
		t.Fatal(err)
	}
	if err := f.sim.WaitFor(ctx10(t), func() bool { return pings(f.sim, 1) >= 4 }); err != nil {
		t.Fatal("the attended link did not keep asking:", err)
	}
	a.Release()
	a.Release()
	n := pings(f.sim, 1)
	time.Sleep(2 * time.Second) // several answer_timeouts
	if got := pings(f.sim, 1); got > n+1 {
		t.Errorf("%d more PINGs after the release", got-n)
	}
	if f.sim.Connections() != 1 || len(f.rec.downs) != 0 {
		t.Fatalf("the link was dropped: %d connections, downs %v", f.sim.Connections(), f.rec.downs)
	}
}

// TestAServerThatNeverAnswersPingsIsNotDropped: a fake server (a socket
// that reads and never writes, for a server that ignores PINGs, which the
// simulator cannot be made to be) is not dropped for the missing answer
// unless it has answered a PING before; the turn's Answer is nil.
func TestAServerThatNeverAnswersPingsIsNotDropped(t *testing.T) {
	logs := &testbin.Buffer{}
	l, rec := runAgainst(t, func(c net.Conn) { defer c.Close(); io.Copy(io.Discard, c) }, logs)
	a := l.Attend("a turn started")
	defer a.Release()
	if err := <-a.Answer(); err != nil {
		t.Fatalf("answer: %v", err)
	}
	if !strings.Contains(logs.String(), "has not answered one since the host started") {
		t.Errorf("no warning in the log:\n%s", logs)
	}
	if len(rec.downs) != 0 {
		t.Fatalf("downs %v", rec.downs)
	}
}

// deadPath is a fake connection whose reads fail as the kernel fails them
// when TCP gives up on a dead path (ETIMEDOUT after tcp_user_timeout or
// the keepalive probes), which a test cannot provoke without a network
// namespace.
type deadPath struct{ net.Conn }

func (deadPath) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
}
func (deadPath) SetReadDeadline(time.Time) error { return nil }

// TestADeadPathIsNamedAsSuch: TCP giving up is not reported as the read
// deadline ("sent nothing for 6m0s"), but as a dead path, with the settings
// that found it.
func TestADeadPathIsNamedAsSuch(t *testing.T) {
	s := resolve(Options{Server: server("127.0.0.1:1", nil)})
	l := New(Options{Server: server("127.0.0.1:1", nil)}, newRecorder())
	c := newConn(1, deadPath{}, s, slog.New(slog.DiscardHandler))
	err := l.readLoop(c, time.Now().Add(-time.Hour))
	if err == nil || strings.Contains(err.Error(), "sent nothing for") || !strings.Contains(err.Error(), "server.liveness.tcp_user_timeout") || Reason(err) != ReasonTimeout {
		t.Fatalf("readLoop: %v (reason %s)", err, Reason(err))
	}
}

// TestOnlyThePongAnswersAPing: a server that answered a PING once, then
// keeps talking (status frames every 50 ms, as frames already on their way
// do when a path dies) but answers no PING, is not taken as alive: a turn's
// PING goes unanswered and the link is dropped. The server is a fake (a
// socket that writes frames of its own), for a server that talks but does
// not answer, which the simulator cannot be made to be.
func TestOnlyThePongAnswersAPing(t *testing.T) {
	l, _ := runAgainst(t, chatterer, io.Discard)
	pongSeen(t, l)
	a := l.Attend("a turn started")
	defer a.Release()
	select {
	case err := <-a.Answer():
		if !IsNoAnswer(err) {
			t.Fatalf("the answer of a server that talks but answers no PING: %v, want no answer", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no verdict on the PING")
	}
}

// chatterer answers the first PING on c with a PONG, then no other, and
// sends a status frame every 50 ms until c fails.
func chatterer(c net.Conn) {
	defer c.Close()
	enc := voice.NewEncoder(c)
	var mu sync.Mutex
	send := func(s string) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(voice.StatusFrame(s))
	}
	go func() {
		dec := voice.NewDecoder(c)
		answered := false
		for {
			f, err := dec.Next()
			if err != nil {
				c.Close()
				return
			}
			if !answered && f.Type == voice.TypeStatus && string(f.Payload) == voice.StatusPing {
				answered = true
				send(voice.StatusPong)
			}
		}
	}()
	for range time.Tick(50 * time.Millisecond) {
		if send("##INFO:STILL_HERE") != nil {
			return
		}
	}
}

// runAgainst runs a link (answers due within 300 ms) against a fake server
// on loopback whose every connection serve handles, until the test ends;
// it returns once the link is up.
func runAgainst(t *testing.T, serve func(net.Conn), logs io.Writer) (*Link, *recorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	rec := newRecorder()
	l := New(Options{Server: server(ln.Addr().String(), fast), Token: func() (string, error) { return "t", nil },
		Log: slog.New(slog.NewTextHandler(logs, nil))}, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; ln.Close() })
	rec.wait(t, "up", func() bool { return len(rec.ups) == 1 })
	return l, rec
}
