package voicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is a bare protocol client over a real TCP connection.
type client struct {
	t    *testing.T
	conn net.Conn
	dec  *voice.Decoder
	enc  *voice.Encoder
}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t *testing.T, s *Server, token string, params ...voice.Param) *client {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &client{t: t, conn: conn, dec: voice.NewDecoder(conn), enc: voice.NewEncoder(conn)}
	if token != "" {
		p, err := voice.Auth{Token: token, Params: params}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		c.send(voice.Frame{Type: voice.TypeAuth, Task: voice.SystemTask, Payload: p})
	}
	return c
}

func (c *client) send(f voice.Frame) {
	c.t.Helper()
	if err := c.enc.Encode(f); err != nil {
		c.t.Fatal(err)
	}
}

// next reads frames until one satisfies match; it fails after 10 s.
func (c *client) next(match func(voice.Frame) bool) voice.Frame {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := c.dec.Decode()
		if err != nil {
			if voice.IsFrameError(err) {
				continue
			}
			c.t.Fatalf("reading: %v", err)
		}
		if match(f) {
			return f
		}
	}
}

func isType(t voice.Type) func(voice.Frame) bool {
	return func(f voice.Frame) bool { return f.Type == t }
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAuthAckPingAndDisconnect(t *testing.T) {
	s := start(t, Options{DisconnectDelay: 10 * time.Millisecond})
	c := dial(t, s, "any-token", voice.Param{Key: "mode", Value: "manual"})
	if f := c.next(isType(voice.TypeStatus)); string(f.Payload) != "##INFO:AUTH_OK" {
		t.Fatalf("ack %q", f.Payload)
	}
	c.send(voice.StatusFrame(voice.StatusPing))
	if f := c.next(isType(voice.TypeStatus)); string(f.Payload) != voice.StatusPong || f.Task != voice.SystemTask {
		t.Fatalf("pong %v", f)
	}
	c.send(voice.StatusFrame(voice.StatusDisconnect))
	if f := c.next(isType(voice.TypeStatus)); string(f.Payload) != voice.StatusDisconnectAck {
		t.Fatalf("disconnect ack %q", f.Payload)
	}
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.dec.Decode(); err != io.EOF {
		t.Fatalf("server did not close: %v", err)
	}
	if a := s.Auths(); len(a) != 1 || a[0].Token != "any-token" {
		t.Fatalf("auths %v", a)
	}
}

func TestAuthFailures(t *testing.T) {
	secret := []byte("sim-secret")
	good, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "dev1", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
	for name, tc := range map[string]struct {
		o     Options
		token string
		ok    bool
	}{
		"fixed token ok":    {Options{Token: "abc"}, "abc", true},
		"fixed token wrong": {Options{Token: "abc"}, "abd", false},
		"jwt ok":            {Options{Secret: secret}, good, true},
		"jwt forged":        {Options{Secret: []byte("other")}, good, false},
		"jwt garbage":       {Options{Secret: secret}, "not.a.jwt", false},
	} {
		t.Run(name, func(t *testing.T) {
			s := start(t, tc.o)
			c := dial(t, s, tc.token)
			f := c.next(isType(voice.TypeStatus))
			if got := voice.ClassifyStatus(f.Payload) != voice.StatusKindError; got != tc.ok {
				t.Fatalf("status %q, want ok=%v", f.Payload, tc.ok)
			}
			if !tc.ok {
				c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.dec.Decode(); err != io.EOF {
					t.Fatalf("not closed after a failed auth: %v", err)
				}
			}
		})
	}
}

func TestAuthDeadline(t *testing.T) {
	s := start(t, Options{AuthTimeout: 50 * time.Millisecond})
	c := dial(t, s, "")
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.dec.Decode(); err != io.EOF {
		t.Fatalf("connection without AUTH stayed open: %v", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	s := start(t, Options{IdleTimeout: 50 * time.Millisecond})
	c := dial(t, s, "tok")
	c.next(isType(voice.TypeStatus))
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.dec.Decode(); err != io.EOF {
		t.Fatalf("idle connection stayed open: %v", err)
	}
}

func TestManualTextTurnWithEmoji(t *testing.T) {
	s := start(t, Options{ReplyDuration: 300 * time.Millisecond})
	c := dial(t, s, "tok", voice.Param{Key: "emoji_mode", Value: "true"})
	c.send(voice.Frame{Type: voice.TypeText, Task: "task1234", Payload: []byte("hello there")})
	c.send(voice.Frame{Type: voice.TypeEnd, Task: "task1234", Seq: 1})
	e := c.next(isType(voice.TypeEmoji))
	if em, _ := voice.ParseEmoji(e.Payload); em.Emoji != "happy" || e.Task != "task1234" || e.Seq != 0 {
		t.Fatalf("emoji %v", e)
	}
	txt := c.next(isType(voice.TypeText))
	if string(txt.Payload) != "You said: hello there" || txt.Task != "task1234" {
		t.Fatalf("text %v", txt)
	}
	var samples, lastSeq int
	end := c.next(func(f voice.Frame) bool {
		if f.Type == voice.TypeAudio {
			if f.Task != "task1234" || f.Seq != lastSeq+1 {
				t.Fatalf("audio frame %v after seq %d", f, lastSeq)
			}
			lastSeq = f.Seq
			samples += len(f.Payload) / 2
		}
		return f.Type == voice.TypeEnd
	})
	if samples != 4800 || end.Task != "task1234" || end.Seq != lastSeq+1 {
		t.Fatalf("got %d samples, end %v", samples, end)
	}
}

func TestAudioTurnRecordsPCM(t *testing.T) {
	s := start(t, Options{ReplyDuration: 60 * time.Millisecond})
	c := dial(t, s, "tok")
	pcm := tone(300, 120*time.Millisecond)
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Payload: pcm[:1920]})
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: 1, Payload: pcm[1920:]})
	c.send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 2})
	if f := c.next(isType(voice.TypeText)); string(f.Payload) != "I heard 0.1 seconds of audio." {
		t.Fatalf("%q", f.Payload)
	}
	if got := s.Audio("t1"); string(got) != string(pcm) {
		t.Fatalf("recorded %d bytes, want the %d sent", len(got), len(pcm))
	}
}

// TestForgetAudioKeepsTheRest: with ForgetAudio the server still answers a
// turn and keeps its other frames, but holds none of its audio.
func TestForgetAudioKeepsTheRest(t *testing.T) {
	s := start(t, Options{ReplyDuration: 60 * time.Millisecond, ForgetAudio: true})
	c := dial(t, s, "tok")
	pcm := tone(300, 120*time.Millisecond)
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Payload: pcm})
	c.send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
	if f := c.next(isType(voice.TypeText)); string(f.Payload) != "I heard 0.1 seconds of audio." {
		t.Fatalf("%q", f.Payload)
	}
	c.next(isType(voice.TypeEnd))
	if got := s.Audio("t1"); len(got) != 0 {
		t.Errorf("Audio kept %d bytes", len(got))
	}
	var ends, texts int
	for _, r := range s.Received() {
		if r.Frame.Type == voice.TypeAudio {
			t.Fatal("Received holds an AUDIO frame")
		}
		if r.Frame.Type == voice.TypeEnd {
			ends++
		}
	}
	for _, r := range s.Sent() {
		if r.Frame.Type == voice.TypeAudio {
			t.Fatal("Sent holds an AUDIO frame")
		}
		if r.Frame.Type == voice.TypeText {
			texts++
		}
	}
	if ends != 1 || texts != 1 {
		t.Errorf("kept %d END received and %d TEXT sent, want 1 and 1", ends, texts)
	}
}

func TestSpeak(t *testing.T) {
	s := start(t, Options{ReplyDuration: 60 * time.Millisecond})
	c := dial(t, s, "tok")
	c.send(voice.Frame{Type: voice.TypeSpeak, Task: "sp1", Payload: []byte("say this")})
	if f := c.next(isType(voice.TypeText)); string(f.Payload) != "say this" || f.Task != "sp1" {
		t.Fatalf("%v", f)
	}
	c.next(isType(voice.TypeEnd))
}

func TestVADTurnAndBargeIn(t *testing.T) {
	s := start(t, Options{ReplyDuration: 30 * time.Second, Pace: true, VADHang: 200 * time.Millisecond})
	c := dial(t, s, "tok", voice.Param{Key: "mode", Value: "vad"})
	c.next(isType(voice.TypeStatus))
	c.send(voice.ListenFrame("turnA", voice.ListenStart, ""))
	if f := c.next(isType(voice.TypeStatus)); string(f.Payload) != voice.StatusListening {
		t.Fatalf("%q", f.Payload)
	}
	speech := tone(300, 300*time.Millisecond)
	silence := make([]byte, 2*16000*300/1000)
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "turnA", Seq: 1, Payload: speech})
	if l, _ := voice.ParseListen(c.next(isType(voice.TypeListen)).Payload); l.State != voice.ListenDetecting || l.TaskID != "turnA" {
		t.Fatalf("%+v", l)
	}
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "turnA", Seq: 2, Payload: silence})
	if l, _ := voice.ParseListen(c.next(isType(voice.TypeListen)).Payload); l.State != voice.ListenStop || l.Mode != "vad" {
		t.Fatalf("%+v", l)
	}
	c.next(func(f voice.Frame) bool { return f.Type == voice.TypeAudio && f.Task == "turnA" })
	// With echo cancellation the client listens on a new task while A plays;
	// speech on B interrupts A's 30-second reply.
	c.send(voice.ListenFrame("turnB", voice.ListenStart, ""))
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "turnB", Seq: 1, Payload: speech})
	c.next(func(f voice.Frame) bool { return f.Type == voice.TypeListen && f.Task == "turnB" })
	c.send(voice.ListenFrame("turnB", voice.ListenStop, ""))
	c.next(func(f voice.Frame) bool { return f.Type == voice.TypeText && f.Task == "turnB" })
	for _, r := range s.Sent() {
		if r.Frame.Type == voice.TypeEnd && r.Frame.Task == "turnA" {
			t.Fatal("reply A ran to its end despite the barge-in")
		}
	}
}

func TestAutoModeWithoutListenStart(t *testing.T) {
	s := start(t, Options{ReplyDuration: 60 * time.Millisecond, VADHang: 100 * time.Millisecond})
	c := dial(t, s, "tok", voice.Param{Key: "mode", Value: "auto"})
	c.send(voice.Frame{Type: voice.TypeAudio, Task: "auto1", Seq: 1, Payload: append(tone(300, 200*time.Millisecond), make([]byte, 6400)...)})
	c.next(func(f voice.Frame) bool {
		return f.Type == voice.TypeListen && strings.Contains(string(f.Payload), `"stop"`)
	})
	c.next(func(f voice.Frame) bool { return f.Type == voice.TypeEnd && f.Task == "auto1" })
}

func register(c *client, names ...string) {
	svcs := map[string]voice.ServiceDef{}
	for _, n := range names {
		svcs[n] = voice.ServiceDef{Description: n, Parameters: json.RawMessage(`{"type":"object"}`)}
	}
	p, _ := voice.MarshalMCP(voice.MCPRegister, voice.Register{Services: svcs})
	c.send(voice.MCPFrame(p))
}

// answerCalls answers every MCP call on c with data "<method> ok", until the connection ends.
func (c *client) answerCalls(match func(voice.Frame) bool) voice.Frame {
	return c.next(func(f voice.Frame) bool {
		if f.Type == voice.TypeMCP {
			v, _ := voice.ParseMCP(f.Payload)
			if call, ok := v.(*voice.Call); ok {
				p, _ := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: call.CallID, Result: voice.Outcome{Success: true, Data: json.RawMessage(fmt.Sprintf("%q", call.Method+" ok "+string(call.Params)))}})
				c.send(voice.MCPFrame(p))
			}
		}
		return match(f)
	})
}

func TestMCPCallAndTextNamingAService(t *testing.T) {
	s := start(t, Options{ReplyDuration: 60 * time.Millisecond})
	c := dial(t, s, "tok")
	register(c, "get_current_time", "create_file")
	if err := s.WaitFor(ctx10(t), func() bool { return len(s.Registers()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Services()); n != 2 {
		t.Fatalf("services %v", s.Services())
	}
	type res struct {
		out voice.Outcome
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := s.Call(ctx10(t), "get_current_time", map[string]string{"format": "simple"})
		done <- res{out, err}
	}()
	c.answerCalls(func(f voice.Frame) bool { return f.Type == voice.TypeMCP })
	r := <-done
	if r.err != nil || !r.out.Success || !strings.Contains(string(r.out.Data), `get_current_time ok {\"format\":\"simple\"}`) {
		t.Fatalf("%+v %v", r.out, r.err)
	}
	c.send(voice.Frame{Type: voice.TypeText, Task: "t2", Payload: []byte(`please create_file {"filename":"a.txt","content":"hi"}`)})
	c.send(voice.Frame{Type: voice.TypeEnd, Task: "t2", Seq: 1})
	txt := c.answerCalls(isType(voice.TypeText))
	if want := `create_file says: create_file ok {"filename":"a.txt","content":"hi"}`; string(txt.Payload) != want {
		t.Fatalf("reply %q, want %q", txt.Payload, want)
	}
}

func TestCallWithoutClient(t *testing.T) {
	s := start(t, Options{})
	if _, err := s.Call(ctx10(t), "x", nil); err == nil || !strings.Contains(err.Error(), "no authenticated client") {
		t.Fatal(err)
	}
}

func TestFaultInjection(t *testing.T) {
	for name, f := range map[string]Faults{
		"split":     {SplitWrites: 3},
		"coalesce":  {Coalesce: true},
		"bracketed": {BracketedSeq: true},
		"unknown":   {Unknown: true},
	} {
		t.Run(name, func(t *testing.T) {
			s := start(t, Options{Faults: f, ReplyDuration: 120 * time.Millisecond})
			c := dial(t, s, "tok")
			c.send(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("hi")})
			c.send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
			var types []string
			c.next(func(fr voice.Frame) bool {
				types = append(types, fr.Type.String())
				return fr.Type == voice.TypeEnd
			})
			want := "STATUS TEXT AUDIO AUDIO END"
			if f.Unknown {
				want = "STATUS TYPE(0x0a) STATUS TEXT AUDIO AUDIO END"
			}
			if got := strings.Join(types, " "); got != want {
				t.Fatalf("got %s want %s", got, want)
			}
		})
	}
	t.Run("bracketed on the wire", func(t *testing.T) {
		s := start(t, Options{Faults: Faults{BracketedSeq: true}})
		c := dial(t, s, "tok")
		buf := make([]byte, 64)
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.ReadAtLeast(c.conn, buf, 27)
		if !strings.HasPrefix(string(buf[:n]), "##START\x0500000000[0000]##INFO") {
			t.Fatalf("%q", buf[:n])
		}
	})
	t.Run("withhold", func(t *testing.T) {
		s := start(t, Options{Faults: Faults{WithholdAuthAck: true, WithholdReplies: true}})
		c := dial(t, s, "tok")
		c.send(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("hi")})
		c.send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
		c.send(voice.StatusFrame(voice.StatusPing))
		if f := c.next(func(voice.Frame) bool { return true }); string(f.Payload) != voice.StatusPong {
			t.Fatalf("first frame back was %v, want only the PONG", f)
		}
	})
	t.Run("drop after", func(t *testing.T) {
		s := start(t, Options{Faults: Faults{DropAfter: 2}})
		c := dial(t, s, "tok")
		c.next(isType(voice.TypeStatus))
		c.send(voice.StatusFrame(voice.StatusPing))
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			if _, err := c.dec.Decode(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if n := len(s.Received()); n != 2 {
			t.Fatalf("received %d frames", n)
		}
	})
}

func TestDropAndInject(t *testing.T) {
	s := start(t, Options{})
	c := dial(t, s, "tok")
	c.next(isType(voice.TypeStatus))
	if err := s.Inject([]byte("garbage##START\x04t       0000injected##END")); err != nil {
		t.Fatal(err)
	}
	if f := c.next(isType(voice.TypeText)); string(f.Payload) != "injected" {
		t.Fatalf("%v", f)
	}
	s.Drop()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.dec.Decode(); err != io.EOF {
		t.Fatalf("%v", err)
	}
	if err := s.WaitFor(ctx10(t), func() bool { return s.Open() == 0 }); err != nil {
		t.Fatal(err)
	}
}

// TestBlackHole: a black-holed connection stays open and is read, but
// nothing comes back, not even a PONG; a new connection is served.
func TestBlackHole(t *testing.T) {
	s := start(t, Options{})
	c := dial(t, s, "tok")
	c.next(isType(voice.TypeStatus))
	if n := s.BlackHole(); n != 1 {
		t.Fatalf("BlackHole silenced %d connections", n)
	}
	c.send(voice.StatusFrame(voice.StatusPing))
	c.send(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("hi")})
	c.send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
	if err := s.WaitFor(ctx10(t), func() bool { return len(s.Received()) == 4 }); err != nil {
		t.Fatal(err)
	}
	c.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if f, err := c.dec.Decode(); err == nil {
		t.Fatalf("a black hole sent %v", f)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("the black-holed connection failed: %v", err)
	}
	if s.Open() != 1 {
		t.Fatal("the black-holed connection was closed")
	}
	c2 := dial(t, s, "tok")
	c2.next(isType(voice.TypeStatus))
	c2.send(voice.StatusFrame(voice.StatusPing))
	if f := c2.next(isType(voice.TypeStatus)); string(f.Payload) != voice.StatusPong {
		t.Fatalf("the new connection got %v", f)
	}
}

// TestIgnoreTurns: PINGs are answered; turns of every kind get nothing.
func TestIgnoreTurns(t *testing.T) {
	s := start(t, Options{Faults: Faults{IgnoreTurns: true}})
	c := dial(t, s, "tok", voice.Param{Key: "mode", Value: "vad"})
	c.next(isType(voice.TypeStatus))
	c.send(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("hi")})
	c.send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1})
	c.send(voice.ListenFrame("t2", voice.ListenStart, ""))
	c.send(voice.Frame{Type: voice.TypeSpeak, Task: "t3", Payload: []byte("say this")})
	c.send(voice.StatusFrame(voice.StatusPing))
	if f := c.next(func(voice.Frame) bool { return true }); string(f.Payload) != voice.StatusPong {
		t.Fatalf("first frame after the turns was %v, want only the PONG", f)
	}
}

func TestMatchService(t *testing.T) {
	svcs := map[string]voice.ServiceDef{"get_current_time": {}, "create_file": {}, "read_file": {}, "list_files": {}}
	for text, want := range map[string]string{
		"What time is it?":             "get_current_time",
		"现在几点了 get_current_time":       "get_current_time",
		`create_file {"filename":"a"}`: "create_file",
		"please create a file":         "create_file",
		"a file, please":               "", // read_file and create_file tie
		"hello":                        "",
	} {
		if got, _ := matchService(text, svcs); got != want {
			t.Errorf("%q: got %q want %q", text, got, want)
		}
	}
}

func TestSayAudio(t *testing.T) {
	s := start(t, Options{ReplyDuration: 60 * time.Millisecond})
	c := dial(t, s, "tok")
	c.next(isType(voice.TypeStatus))
	pcm := tone(500, 180*time.Millisecond)
	task, err := s.SayAudio("a reminder", pcm)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		f := c.next(func(f voice.Frame) bool {
			return f.Task == task && (f.Type == voice.TypeAudio || f.Type == voice.TypeEnd)
		})
		if f.Type == voice.TypeEnd {
			break
		}
		got = append(got, f.Payload...)
	}
	if !bytes.Equal(got, pcm) {
		t.Fatalf("the reply carried %d bytes of audio, want the %d given", len(got), len(pcm))
	}
}
