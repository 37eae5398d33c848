package link

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Handler that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	ups    []int
	downs  []error
	frames []voice.Frame
	signal chan struct{}
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1000)} }

func (r *recorder) Up(conn int) {
	r.mu.Lock()
	r.ups = append(r.ups, conn)
	r.mu.Unlock()
	r.signal <- struct{}{}
}
func (r *recorder) Down(conn int, err error) {
	r.mu.Lock()
	r.downs = append(r.downs, err)
	r.mu.Unlock()
	r.signal <- struct{}{}
}
func (r *recorder) Frame(conn int, f voice.Frame) {
	r.mu.Lock()
	r.frames = append(r.frames, f)
	r.mu.Unlock()
	r.signal <- struct{}{}
}

func (r *recorder) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type fixture struct {
	sim  *voicetest.Server
	rec  *recorder
	link *Link
	logs *testbin.Buffer
	stop func()
}

// server returns the configuration's default server settings for addr,
// with fast reconnects, changed by set.
func server(addr string, set func(s *config.Server)) config.Server {
	s := config.Default().Server
	s.Address = addr
	s.Params = config.Params{}
	s.Reconnect.Base, s.Reconnect.Cap = config.Duration(10*time.Millisecond), config.Duration(50*time.Millisecond)
	if set != nil {
		set(&s)
	}
	return s
}

func run(t *testing.T, so voicetest.Options, set func(s *config.Server)) *fixture {
	t.Helper()
	return runWith(t, so, set, nil)
}

// runWith is run with more of the link's options (opt, when set, changes them).
func runWith(t *testing.T, so voicetest.Options, set func(s *config.Server), opt func(*Options)) *fixture {
	t.Helper()
	sim, err := voicetest.NewServer(so)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testbin.Buffer{}
	lo := Options{Server: server(sim.Addr(), set), Token: func() (string, error) { return "secret-token-123", nil }}
	lo.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opt != nil {
		opt(&lo)
	}
	rec := newRecorder()
	l := New(lo, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	f := &fixture{sim: sim, rec: rec, link: l, logs: logs}
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v", err)
			}
			sim.Close()
		})
	}
	t.Cleanup(f.stop)
	return f
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAuthThenFramesThenCleanDisconnect(t *testing.T) {
	f := run(t, voicetest.Options{DisconnectDelay: 10 * time.Millisecond, ReplyDuration: 60 * time.Millisecond},
		func(s *config.Server) {
			s.Params = config.Params{Mode: "manual", VoiceID: "Chinese (Mandarin)_Wise_Women"}
		})
	f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 1 }); err != nil {
		t.Fatal(err)
	}
	a := f.sim.Auths()[0]
	if v, _ := a.Get("voiceid"); a.Token != "secret-token-123" || v != "Chinese (Mandarin)_Wise_Women" {
		t.Fatalf("auth %+v", a)
	}
	if err := f.link.Send(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	f.link.Send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
	f.rec.wait(t, "reply", func() bool {
		return len(f.rec.frames) > 0 && f.rec.frames[len(f.rec.frames)-1].Type == voice.TypeEnd
	})
	if got := string(f.rec.frames[0].Payload); got != "You said: hello" {
		t.Fatalf("first frame %q", got)
	}
	f.stop()
	var gotDisconnect bool
	for _, r := range f.sim.Received() {
		gotDisconnect = gotDisconnect || (r.Frame.Type == voice.TypeStatus && string(r.Frame.Payload) == voice.StatusDisconnect)
	}
	if !gotDisconnect {
		t.Fatal("no ##DISCONNECT on shutdown")
	}
	if !strings.Contains(f.logs.String(), "disconnected cleanly") {
		t.Fatalf("log:\n%s", f.logs)
	}
	if strings.Contains(f.logs.String(), "secret-token-123") {
		t.Fatal("the token reached the log")
	}
}

func TestReconnectsAfterDrop(t *testing.T) {
	f := run(t, voicetest.Options{}, nil)
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 1 }); err != nil {
		t.Fatal(err)
	}
	f.sim.Drop()
	f.rec.wait(t, "second up", func() bool { return len(f.rec.ups) == 2 && len(f.rec.downs) == 1 })
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 2 }); err != nil {
		t.Fatal(err)
	}
}

func TestAuthFailureIsReportedAndRetried(t *testing.T) {
	f := run(t, voicetest.Options{Token: "the-right-one"}, nil)
	f.rec.wait(t, "two failed connections", func() bool { return len(f.rec.downs) >= 2 })
	f.rec.mu.Lock()
	err := f.rec.downs[0]
	f.rec.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "authentication failed") || !strings.Contains(err.Error(), "server.token") {
		t.Fatalf("down error %v", err)
	}
	if strings.Contains(f.logs.String(), "secret-token-123") {
		t.Fatal("the token reached the log")
	}
}

func TestNoAuthAckIsFine(t *testing.T) {
	f := run(t, voicetest.Options{Faults: voicetest.Faults{WithholdAuthAck: true}, ReplyDuration: 60 * time.Millisecond}, func(s *config.Server) { s.AuthTimeout = config.Duration(50 * time.Millisecond) })
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sim.Say("hi"); err != nil {
		t.Fatal(err)
	}
	f.rec.wait(t, "text", func() bool { return len(f.rec.frames) > 0 })
	if len(f.rec.downs) != 0 {
		t.Fatalf("downs %v", f.rec.downs)
	}
}

func TestKeepalivePings(t *testing.T) {
	f := run(t, voicetest.Options{}, func(s *config.Server) { s.Keepalive = config.Duration(40 * time.Millisecond) })
	err := f.sim.WaitFor(ctx10(t), func() bool {
		n := 0
		for _, r := range f.sim.Received() {
			if string(r.Frame.Payload) == voice.StatusPing {
				n++
			}
		}
		return n >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := f.sim.Connections(); c != 1 {
		t.Fatalf("%d connections; keepalive should keep the first", c)
	}
}

func TestGarbageAndOversizedFramesAreSurvived(t *testing.T) {
	f := run(t, voicetest.Options{}, func(s *config.Server) { s.MaxFrame = 1000 })
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 1 }); err != nil {
		t.Fatal(err)
	}
	big := append([]byte("##START\x04big     0000"), bytes.Repeat([]byte("x"), 5000)...)
	big = append(big, "##END"...)
	for _, raw := range [][]byte{[]byte("\x00\xffnoise"), big, []byte("##START\x04bad     x0x0bad seq##END"), []byte("##START\x0b00000000" + "0000new type##END")} {
		if err := f.sim.Inject(raw); err != nil {
			t.Fatalf("%v; log:\n%s", err, f.logs)
		}
	}
	f.sim.Send(voice.Frame{Type: voice.TypeText, Task: "after", Payload: []byte("still here")})
	f.rec.wait(t, "frame after the garbage", func() bool { return len(f.rec.frames) == 1 })
	if f.rec.frames[0].Task != "after" {
		t.Fatalf("%v", f.rec.frames)
	}
	logs := f.logs.String()
	for _, want := range []string{"1000-byte limit", "not 4 decimal digits", "skipped bytes outside any frame", "unknown type"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if len(f.rec.downs) != 0 {
		t.Fatalf("the link went down: %v", f.rec.downs)
	}
}

func TestSimulatorWriteFaults(t *testing.T) {
	for name, faults := range map[string]voicetest.Faults{
		"split": {SplitWrites: 2}, "coalesce": {Coalesce: true}, "bracketed": {BracketedSeq: true}, "unknown": {Unknown: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := run(t, voicetest.Options{Faults: faults, ReplyDuration: 120 * time.Millisecond}, nil)
			f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
			f.link.Send(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("hi")})
			f.link.Send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
			f.rec.wait(t, "reply", func() bool { return len(f.rec.frames) == 4 })
			var got []string
			for _, fr := range f.rec.frames {
				got = append(got, fmt.Sprintf("%s/%d", fr.Type, fr.Seq))
			}
			if s := strings.Join(got, " "); s != "TEXT/0 AUDIO/1 AUDIO/2 END/3" {
				t.Fatalf("frames %s", s)
			}
		})
	}
}

// With no write in progress and no audio queued, an audio frame's sender
// writes it itself, ahead of queued control frames and without the writer.
func TestAudioIsWrittenByItsSender(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(1, a, &settings{keepalive: time.Hour}, slog.New(slog.DiscardHandler))
	defer c.close()
	c.send(voice.Frame{Type: voice.TypeMCP, Task: voice.MCPTask, Payload: []byte(`{}`)})
	sent := make(chan error, 1)
	go func() {
		sent <- c.send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: 1, Payload: make([]byte, 1920)})
	}()
	f, err := voice.NewDecoder(b).Decode() // no writeLoop runs
	if err != nil || f.Type != voice.TypeAudio {
		t.Fatalf("first frame written: %v %v", f, err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

func TestSendWhileDown(t *testing.T) {
	l := New(Options{Server: server("127.0.0.1:1", nil), Token: func() (string, error) { return "t", nil }}, newRecorder())
	if err := l.Send(voice.Frame{Type: voice.TypeText, Task: "t"}); err != ErrDown {
		t.Fatalf("got %v", err)
	}
	if err := l.Send(voice.Frame{Type: voice.TypeText, Task: "far too long"}); err == nil || err == ErrDown {
		t.Fatalf("an unframeable frame got %v", err)
	}
}

// The writer drains queued audio before queued control frames.
func TestAudioGoesFirst(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(1, a, &settings{keepalive: time.Hour}, slog.New(slog.DiscardHandler))
	for i := range 3 {
		c.send(voice.Frame{Type: voice.TypeMCP, Task: voice.MCPTask, Seq: i, Payload: bytes.Repeat([]byte("r"), 70000)})
	}
	c.wmu.Lock() // a write in progress: the audio frame is queued
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: 7, Payload: make([]byte, 1920)})
	c.wmu.Unlock()
	go c.writeLoop()
	defer c.close()
	f, err := voice.NewDecoder(b).Decode()
	if err != nil || f.Type != voice.TypeAudio {
		t.Fatalf("first frame written: %v %v", f, err)
	}
}

// blockingHandler is a Handler whose Frame blocks until released: a consumer
// of the server's frames that got stuck.
type blockingHandler struct {
	*recorder
	release chan struct{}
}

func (b blockingHandler) Frame(conn int, f voice.Frame) { <-b.release }

func TestCheckNamesAStuckFrameHandler(t *testing.T) {
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond, ReplyDuration: 60 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	h := blockingHandler{newRecorder(), make(chan struct{})}
	l := New(Options{Server: server(sim.Addr(), nil), Token: func() (string, error) { return "t", nil }}, h)
	if err := l.Check(ctx10(t)); err != nil {
		t.Fatalf("a link that does not run: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h.wait(t, "up", func() bool { return len(h.ups) == 1 })
	if err := sim.WaitFor(ctx10(t), func() bool { return len(sim.Auths()) == 1 }); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Check(ctx10(t)); err != nil {
			t.Fatalf("check %d of a healthy link: %v", i, err)
		}
	}
	if _, err := sim.Say("hello"); err != nil {
		t.Fatal(err)
	}
	var err2 error
	for err2 == nil { // the first check sees the call inside the handler, the second that it is still there
		time.Sleep(5 * time.Millisecond)
		err2 = l.Check(ctx10(t))
	}
	if !strings.Contains(err2.Error(), "stuck in a frame handler") {
		t.Fatalf("check: %v", err2)
	}
	close(h.release)
	deadline := time.Now().Add(10 * time.Second)
	for l.Check(ctx10(t)) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the check still fails after the handler returned")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A stream reuses its frame's buffer once Send returns: an audio frame
// queued behind a write in progress is the link's own copy.
func TestAQueuedAudioFrameIsTheLinksOwnCopy(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(1, a, &settings{keepalive: time.Hour}, slog.New(slog.DiscardHandler))
	defer c.close()
	buf := []byte("first frame's audio")
	c.wmu.Lock() // a write in progress: the frame is queued
	if err := c.send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: 1, Payload: buf}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "next frame's audio!")
	c.wmu.Unlock()
	go c.writeLoop()
	f, err := voice.NewDecoder(b).Decode()
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Payload) != "first frame's audio" {
		t.Errorf("the queued frame went out as %q", f.Payload)
	}
}

// TestAnExtraAUTHParametersValueNeverReachesTheLog: any key under
// server.params is passed through to the server, so an owner may put a
// secret there (an API key the server wants); the log names such a key
// but not its value, at any level.
func TestAnExtraAUTHParametersValueNeverReachesTheLog(t *testing.T) {
	f := run(t, voicetest.Options{}, func(s *config.Server) {
		s.Params = config.Params{Mode: "manual", Extra: map[string]string{"api_key": "extra-secret-456"}}
	})
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.sim.Auths()[0].Get("api_key"); v != "extra-secret-456" {
		t.Fatalf("the server got api_key %q", v)
	}
	f.stop()
	logs := f.logs.String()
	if strings.Contains(logs, "extra-secret-456") {
		t.Errorf("an extra AUTH parameter's value reached the log:\n%s", logs)
	}
	if !strings.Contains(logs, "api_key") || !strings.Contains(logs, `mode=\"manual\"`) {
		t.Errorf("the log does not name the parameters sent:\n%s", logs)
	}
}

// TestNoAudioFrameIsWrittenWhileWithheld: the microphone's mute is asked
// again at the last door, the write: an audio frame sent (or queued
// before the mute) while Withheld reports true never reaches the server,
// and the frames around it still do.
func TestNoAudioFrameIsWrittenWhileWithheld(t *testing.T) {
	var muted atomic.Bool
	f := runWith(t, voicetest.Options{}, nil, func(o *Options) { o.Withheld = muted.Load })
	f.rec.wait(t, "up", func() bool { return len(f.rec.ups) == 1 })
	audio := func(seq int, b byte) {
		if err := f.link.Send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: seq, Payload: bytes.Repeat([]byte{b}, 960)}); err != nil {
			t.Fatal(err)
		}
	}
	end := func(seq int) {
		f.link.Send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: seq})
		// The writer takes queued audio before anything else: once the
		// END is there, every frame sent before it was written or dropped.
		if err := f.sim.WaitFor(ctx10(t), func() bool {
			for _, r := range f.sim.Received() {
				if r.Frame.Type == voice.TypeEnd && r.Frame.Seq == seq {
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatal(err)
		}
	}
	audio(0, 1)
	if err := f.sim.WaitFor(ctx10(t), func() bool {
		return slices.ContainsFunc(f.sim.Received(), func(r voicetest.Received) bool { return r.Frame.Type == voice.TypeAudio })
	}); err != nil {
		t.Fatal(err)
	}
	muted.Store(true)
	for i := 1; i <= 20; i++ {
		audio(i, 2)
	}
	end(21)
	muted.Store(false)
	audio(22, 3)
	end(23)
	var sent []int
	for _, r := range f.sim.Received() {
		if r.Frame.Type == voice.TypeAudio {
			sent = append(sent, r.Frame.Seq)
		}
	}
	if !slices.Equal(sent, []int{0, 22}) {
		t.Errorf("audio frames %v reached the server; want 0 and 22, written before the mute and sent after it", sent)
	}
}

// TestAnUpdateWhileConnectingReconnectsWithTheNewSettings: a reload that
// lands while a connection is being set up (its settings read, the AUTH
// not yet sent, the connection not yet up) still reaches the server: that
// connection makes way, once, for one with the new AUTH parameters. The
// window is held open by the token source, which the connection calls
// after reading its settings.
func TestAnUpdateWhileConnectingReconnectsWithTheNewSettings(t *testing.T) {
	var calls atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	token := func() (string, error) {
		if calls.Add(1) == 1 { // the first connection's call; Update's calls pass
			close(entered)
			<-release
		}
		return "secret-token-123", nil
	}
	f := runWith(t, voicetest.Options{}, func(s *config.Server) { s.Params = config.Params{Mode: "manual"} },
		func(o *Options) { o.Token = token })
	select {
	case <-entered:
	case <-ctx10(t).Done():
		t.Fatal("the first connection never asked for the token")
	}
	f.link.Update(Options{Server: server(f.sim.Addr(), func(s *config.Server) { s.Params = config.Params{Mode: "auto"} }), Token: token})
	close(release)
	mode := func(i int) string { v, _ := f.sim.Auths()[i].Get("mode"); return v }
	if err := f.sim.WaitFor(ctx10(t), func() bool {
		return slices.ContainsFunc(f.sim.Auths(), func(a voice.Auth) bool { v, _ := a.Get("mode"); return v == "auto" })
	}); err != nil {
		var got []string
		for i := range f.sim.Auths() {
			got = append(got, mode(i))
		}
		t.Fatalf("the server never got an AUTH with the new mode (got modes %q): %v", got, err)
	}
	f.rec.wait(t, "the second connection up", func() bool { return len(f.rec.ups) == 2 })
	f.stop()
	if a := f.sim.Auths(); len(a) != 2 || mode(0) != "manual" || mode(1) != "auto" {
		t.Errorf("%d AUTHs; want two: the first with the old mode, then one with the new", len(a))
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	if len(f.rec.downs) != 2 || f.rec.downs[0] != nil {
		t.Errorf("downs %v; want the first connection ended by the host (nil), then the shutdown", f.rec.downs)
	}
}

// TestACorrectedAddressConnectsWithoutWaitingOutTheBackoff: while the
// link is down and waiting to connect again, a reload that fixes
// server.address connects at once, not after the back-off (up to
// reconnect.cap, 30 s by default).
func TestACorrectedAddressConnectsWithoutWaitingOutTheBackoff(t *testing.T) {
	nobody := refusingAddr(t)
	slow := func(s *config.Server) {
		s.Reconnect.Base, s.Reconnect.Cap = config.Duration(time.Hour), config.Duration(time.Hour)
	}
	f := runWith(t, voicetest.Options{}, func(s *config.Server) { slow(s); s.Address = nobody }, nil)
	for ctx := ctx10(t); !strings.Contains(f.logs.String(), "retry_in="); time.Sleep(5 * time.Millisecond) {
		if ctx.Err() != nil {
			t.Fatalf("the first attempt did not fail:\n%s", f.logs)
		}
	}
	f.link.Update(Options{Server: server(f.sim.Addr(), slow), Token: func() (string, error) { return "secret-token-123", nil }})
	if err := f.sim.WaitFor(ctx10(t), func() bool { return len(f.sim.Auths()) == 1 }); err != nil {
		t.Fatalf("the corrected address was not tried before the back-off of an hour ended: %v", err)
	}
}

// refusingAddr is a loopback address that refuses connections for the
// test's length: a socket bound to it that does not listen holds the port
// (a port listened on and closed could be the simulator's next).
func refusingAddr(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
