// Package voicetest is a simulated voice server for tests, demos and
// development, in the manner of net/http/httptest: it authenticates, answers
// PING and DISCONNECT, runs manual and VAD turns with a spoken (tone) reply,
// calls the client's MCP services on demand, and injects faults. Production
// code must not import it.
package voicetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// Options configure a Server. The zero value is a usable simulator.
type Options struct {
	// Addr to listen on; "" means 127.0.0.1:0.
	Addr string
	// Listener, when set, is accepted on instead of Addr: an in-memory
	// listener lets a test run the server and its client in virtual time
	// (testing/synctest), which a real socket cannot. Close closes it.
	Listener net.Listener
	// Token, when set, is the only token accepted. Secret, when set, makes the
	// token an HS256 JWT checked with it. Neither: any non-empty token passes.
	Token  string
	Secret []byte
	// AuthTimeout drops a connection that sends no AUTH in time (default 5 s).
	AuthTimeout time.Duration
	// IdleTimeout drops a connection that sends nothing for this long (default 5 min).
	IdleTimeout time.Duration
	// DisconnectDelay is how long after ##DISCONNECT the server closes (default 3 s).
	DisconnectDelay time.Duration
	// AuthAck is the STATUS sent after a good AUTH (default "##INFO:AUTH_OK").
	AuthAck string
	// AuthFail is the STATUS sent before closing on a bad AUTH (default "##ERROR:AUTH_FAILED").
	AuthFail string

	// ReplyText, when set, replaces the generated reply text.
	ReplyText string
	// ToneHz and ReplyDuration shape the reply audio (default 880 Hz, 1 s).
	ToneHz        float64
	ReplyDuration time.Duration
	// ReplyPCM, when set, is the reply audio (16 kHz s16le mono) instead of a tone.
	ReplyPCM []byte
	// FrameDuration is the length of one reply audio frame (default 60 ms).
	FrameDuration time.Duration
	// Pace sends reply audio in real time; otherwise as fast as possible.
	Pace bool
	// ForgetAudio keeps AUDIO frames out of Received and Sent and the
	// client's PCM out of Audio, which otherwise hold all of it: for long
	// runs (a soak of hours) that account for calls and turns, not bytes.
	ForgetAudio bool
	// Emoji is the key sent when emoji_mode is on (default "happy").
	Emoji string

	// VADThreshold is the RMS above which a 16 kHz frame is speech (default 500),
	// VADHang the silence that ends speech (default 700 ms, counted in samples).
	VADThreshold float64
	VADHang      time.Duration

	// Opus encodes reply audio and decodes client audio when the session asks
	// for opus; nil means opus sessions get PCM and a logged warning.
	Opus OpusCodec

	// CallTimeout bounds an automatic MCP call made for a user's text (default 10 s).
	CallTimeout time.Duration

	Faults Faults
	// Log receives one line per frame received and sent; nil discards.
	Log *slog.Logger
}

// OpusCodec converts between 16 kHz mono PCM and one AUDIO_FRAME payload of
// length-prefixed Opus packets.
type OpusCodec interface {
	EncodeFrame(pcm []int16) ([]byte, error)
	DecodeFrame(payload []byte) ([]int16, error)
}

// Faults are misbehaviours to harden clients against. Each is independent.
type Faults struct {
	// SplitWrites writes every frame in pieces of at most this many bytes.
	SplitWrites int
	// Coalesce writes all frames ready at once in a single write.
	Coalesce bool
	// BracketedSeq sends the sequence number as "[dddd]".
	BracketedSeq bool
	// Unknown sends an unknown frame type and an unknown STATUS after each ack and reply.
	Unknown bool
	// WithholdReplies accepts turns but never answers them.
	WithholdReplies bool
	// FailReplies answers every turn with this STATUS on the turn's task
	// (e.g. "##ERROR:TTS_FAILED") instead of a reply.
	FailReplies string
	// DropEnd streams replies without their END_FRAME, as a server that
	// loses the end of a turn.
	DropEnd bool
	// WithholdAuthAck never acknowledges AUTH.
	WithholdAuthAck bool
	// DropAfter closes a connection after receiving this many frames (0 = never).
	DropAfter int
	// IgnoreTurns answers PINGs, DISCONNECT and MCP but never acknowledges
	// a turn: no "listening" STATUS, no LISTEN, no reply, nothing on the
	// turn's task.
	IgnoreTurns bool
}

// Received is one frame the server read, with the number of its connection (from 1).
type Received struct {
	Conn  int
	Frame voice.Frame
}

// Server is a running simulator.
type Server struct {
	opts Options
	ln   net.Listener
	log  *slog.Logger

	mu        sync.Mutex
	changed   chan struct{}
	conns     map[int]*session
	nconn     int
	latest    *session
	received  []Received
	registers []voice.Register
	auths     []voice.Auth
	audio     map[string][]byte
	sent      []Received
	closed    bool

	done    chan struct{} // closed by Close
	callSeq atomic.Int64
	wg      sync.WaitGroup
}

// NewServer starts a simulator listening on opts.Addr.
func NewServer(opts Options) (*Server, error) {
	opts.defaults()
	ln := opts.Listener
	if ln == nil {
		addr := opts.Addr
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("voicesim: listen on %s: %w", addr, err)
		}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, ln: ln, log: log, changed: make(chan struct{}), done: make(chan struct{}), conns: map[int]*session{}, audio: map[string][]byte{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (o *Options) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&o.AuthTimeout, 5*time.Second)
	set(&o.IdleTimeout, 5*time.Minute)
	set(&o.DisconnectDelay, 3*time.Second)
	set(&o.ReplyDuration, time.Second)
	set(&o.FrameDuration, 60*time.Millisecond)
	set(&o.VADHang, 700*time.Millisecond)
	set(&o.CallTimeout, 10*time.Second)
	if o.AuthAck == "" {
		o.AuthAck = "##INFO:AUTH_OK"
	}
	if o.AuthFail == "" {
		o.AuthFail = "##ERROR:AUTH_FAILED"
	}
	if o.ToneHz == 0 {
		o.ToneHz = 880
	}
	if o.Emoji == "" {
		o.Emoji = "happy"
	}
	if o.VADThreshold == 0 {
		o.VADThreshold = 500
	}
}

// Addr is the address the simulator listens on, as host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening, drops every connection and waits for them to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	s.mu.Unlock()
	err := s.ln.Close()
	s.Drop()
	s.wg.Wait()
	return err
}

// Drop closes every open connection at once, as a server that loses the link.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.conn.Close()
	}
}

// BlackHole makes the connections open now fall silent, as a path that died
// without a FIN or RST (a Wi-Fi roam, a NAT reset) or a proxy that stopped
// forwarding: each stays open and is read (its frames are still in
// Received), but nothing more is written on it, not even a PONG, and
// nothing it sends is acted on. Connections made later are served as usual.
// It returns how many connections fell silent.
func (s *Server) BlackHole() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.out.silence()
	}
	s.notifyLocked()
	return len(s.conns)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.nconn++
		c := newSession(s, s.nconn, conn)
		s.conns[c.id] = c
		s.mu.Unlock()
		s.log.Info("client connected", "conn", c.id, "remote", conn.RemoteAddr().String())
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := c.run()
			s.mu.Lock()
			delete(s.conns, c.id)
			if s.latest == c {
				s.latest = nil
			}
			s.notifyLocked()
			s.mu.Unlock()
			s.log.Info("client disconnected", "conn", c.id, "reason", err)
		}()
	}
}

// notifyLocked wakes every WaitFor; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond holds (checked after every event) or ctx ends.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("voicesim: condition not met: %w", ctx.Err())
		}
	}
}

// Connections returns how many connections have been accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nconn
}

// Open returns how many connections are open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Received returns a copy of every frame read so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Sent returns a copy of every frame written so far.
func (s *Server) Sent() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.sent...)
}

// Registers returns every register message received, oldest first.
func (s *Server) Registers() []voice.Register {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]voice.Register(nil), s.registers...)
}

// Services returns the service names of the latest register, sorted.
func (s *Server) Services() map[string]voice.ServiceDef {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.registers) == 0 {
		return nil
	}
	return s.registers[len(s.registers)-1].Services
}

// Auths returns the AUTH of every authenticated connection, oldest first.
func (s *Server) Auths() []voice.Auth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]voice.Auth(nil), s.auths...)
}

// Audio returns the client audio received for a task as 16 kHz s16le PCM
// (decoded when the session sent Opus).
func (s *Server) Audio(task string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.audio[task]...)
}

func (s *Server) current() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		return nil, errors.New("voicesim: no authenticated client is connected")
	}
	return s.latest, nil
}

// Call sends an MCP call to the latest authenticated client and waits for the
// result with the same call_id.
func (s *Server) Call(ctx context.Context, method string, params any) (voice.Outcome, error) {
	c, err := s.current()
	if err != nil {
		return voice.Outcome{}, err
	}
	return c.call(ctx, method, params)
}

// Send writes a frame to the latest authenticated client.
func (s *Server) Send(f voice.Frame) error {
	c, err := s.current()
	if err != nil {
		return err
	}
	return c.send(f)
}

// Inject writes raw bytes to the latest authenticated client, for garbage and
// oversized-frame tests.
func (s *Server) Inject(raw []byte) error {
	c, err := s.current()
	if err != nil {
		return err
	}
	return c.out.writeRaw(raw)
}

// Say makes the server speak unprompted: a reply with the text on a new task.
func (s *Server) Say(text string) (task string, err error) {
	c, err := s.current()
	if err != nil {
		return "", err
	}
	task = "say" + strconv.Itoa(int(s.callSeq.Add(1))%100000)
	c.startReply(task, func() string { return text })
	return task, nil
}

// SayAudio is Say with its own reply audio (16 kHz s16le mono) in place
// of the configured one.
func (s *Server) SayAudio(text string, pcm []byte) (task string, err error) {
	c, err := s.current()
	if err != nil {
		return "", err
	}
	task = "say" + strconv.Itoa(int(s.callSeq.Add(1))%100000)
	c.startReplyPCM(task, func() string { return text }, pcm)
	return task, nil
}

func (s *Server) nextCallID() string {
	return "call_" + strconv.FormatInt(s.callSeq.Add(1), 10)
}

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		return p, nil
	case []byte:
		return json.RawMessage(p), nil
	case string:
		return json.RawMessage(p), nil
	default:
		b, err := json.Marshal(p)
		return b, err
	}
}
