// Package link owns the TCP connection to the voice server: dialling,
// authentication, keepalive, reconnection with backoff, and the single writer
// that sends audio ahead of everything else. It knows frames, not services
// or sound.
package link

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/backoff"
	"github.com/agenthost/agenthost/internal/stall"
	"github.com/agenthost/agenthost/proto/voice"
)

// Options configure a Link.
type Options struct {
	// Server is the server section of the configuration: address, TLS, AUTH
	// parameters, timeouts, keepalive, reconnect backoff and frame bound
	// (config.Default has the defaults; a link has none of its own).
	Server config.Server
	// Token returns the AUTH token; it is called before every connection so a
	// refreshed token file is picked up.
	Token func() (string, error)
	Log   *slog.Logger
	// Withheld, when set, is asked before each audio frame (the
	// microphone's) is written: while it reports true the frame is dropped,
	// not sent. It is the microphone's mute at the last door, so that frames
	// queued before a mute do not leave after it. New takes it; Update
	// keeps the link's.
	Withheld func() bool
}

// disconnectWait bounds the wait for the server's answer to ##DISCONNECT.
const disconnectWait = 2 * time.Second

// settings are Options resolved for use.
type settings struct {
	address     string
	tls         bool
	token       func() (string, error)
	params      []voice.Param
	dialTimeout time.Duration
	authTimeout time.Duration // an error STATUS or close this soon after AUTH is an auth failure
	keepalive   time.Duration // PING after this long without traffic
	// answerTimeout bounds the wait for the answer to a PING; tcpUserTimeout
	// and tcpKeepalive are the socket's (0 = the system's default, off).
	answerTimeout, tcpUserTimeout, tcpKeepalive time.Duration
	reconnect                                   backoff.Backoff
	maxFrame                                    int
	lang                                        string // server.params.lang: the words of the server's statuses in the log
}

func resolve(o Options) *settings {
	s := o.Server
	out := &settings{address: s.Address, tls: s.TLS, token: o.Token,
		dialTimeout: s.DialTimeout.D(), authTimeout: s.AuthTimeout.D(), keepalive: s.Keepalive.D(),
		answerTimeout: s.Liveness.AnswerTimeout.D(), tcpUserTimeout: s.Liveness.TCPUserTimeout.D(), tcpKeepalive: s.Liveness.TCPKeepalive.D(),
		reconnect: backoff.Backoff{Base: s.Reconnect.Base.D(), Cap: s.Reconnect.Cap.D()}, maxFrame: int(s.MaxFrame), lang: s.Params.Lang}
	for _, kv := range s.Params.Pairs() {
		out.params = append(out.params, voice.Param{Key: kv[0], Value: kv[1]})
	}
	if out.answerTimeout <= 0 {
		out.answerTimeout = 5 * time.Second
	}
	return out
}

// Handler receives the link's events. Calls come from the link's goroutines;
// a handler must not block for long in Frame.
type Handler interface {
	// Up is called once per connection, right after AUTH is written.
	Up(conn int)
	// Frame is called for every frame that is not a link-level STATUS.
	Frame(conn int, f voice.Frame)
	// Down is called when a connection that was Up ends; err is nil when
	// the host ended it (shutdown, new server settings), otherwise why the
	// link went down (IsNoAnswer tells a server that stopped answering).
	Down(conn int, err error)
}

// ErrDown is returned by Send while no connection is up.
var ErrDown = errors.New("link: not connected to the voice server")

// Link keeps one connection to the voice server alive.
type Link struct {
	set atomic.Pointer[settings] // replaced by Update; each connection keeps the one it started with
	h   Handler
	log *slog.Logger

	mu  sync.Mutex
	cur *conn
	seq int

	connections  atomic.Int64 // connections that sent AUTH
	noTokenSaid  atomic.Bool
	authFailures atomic.Int64
	running      atomic.Bool
	reconfigure  chan struct{}      // Update asks the connection up to make way
	probe        chan chan struct{} // answered by Run's loop, for Check
	handling     stall.Section      // around the Handler's calls from the read loop

	attending atomic.Int32 // turns that hold an Attention
	pongSeen  atomic.Bool  // the server has answered a PING (it does answer them)
	state     *stateKeeper
	withheld  func() bool // Options.Withheld as New got it (a reload does not change it)
}

// New returns a link; Run connects it.
func New(o Options, h Handler) *Link {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Link{h: h, log: log.With("component", "link"), probe: make(chan chan struct{}), reconfigure: make(chan struct{}, 1), state: newStateKeeper(), withheld: o.Withheld}
	l.set.Store(resolve(o))
	return l
}

// errReconfigured ends a connection so that the next one uses new settings.
var errReconfigured = errors.New("the server settings changed")

// Update replaces the link's settings (a configuration reload). When the
// server, its TLS, the token or the AUTH parameters changed, the connection
// that is up says DISCONNECT and the link connects again at once, once; the
// other settings apply from the next connection. It reports whether it
// reconnects.
func (l *Link) Update(o Options) bool {
	next := resolve(o)
	prev := l.set.Swap(next)
	if prev.address != next.address {
		l.pongSeen.Store(false) // another server: learn again whether it answers PINGs
	}
	if !reconnects(prev, next) {
		return false
	}
	up, _ := l.Up()
	// A connection being set up compares its settings with these once
	// it is up (session); a link waiting out its back-off connects at once.
	l.askReconfigure()
	return up
}

// reconnects reports whether a connection made with prev must make way for
// one with next: the server, its TLS, the token or the AUTH parameters differ.
func reconnects(prev, next *settings) bool {
	return prev != next && !(prev.address == next.address && prev.tls == next.tls && slices.Equal(prev.params, next.params) && sameToken(prev.token, next.token))
}

// askReconfigure asks the connection up to make way; a request already
// pending stands for this one.
func (l *Link) askReconfigure() {
	select {
	case l.reconfigure <- struct{}{}:
	default:
	}
}

// sameToken compares what two token sources give now; a failing source
// counts as a change.
func sameToken(a, b func() (string, error)) bool {
	ta, err1 := a()
	tb, err2 := b()
	return err1 == nil && err2 == nil && ta == tb
}

// Check reports whether the link makes progress, for the watchdog: Run's
// loop answers before ctx ends, and no Handler call from the read loop has
// lasted since the previous Check.
func (l *Link) Check(ctx context.Context) error {
	if !l.running.Load() {
		return nil
	}
	if l.handling.Stuck() {
		return errors.New("the link's read loop is stuck in a frame handler (a consumer of the server's frames does not return)")
	}
	r := make(chan struct{})
	select {
	case l.probe <- r:
		<-r
		return nil
	case <-ctx.Done():
		return errors.New("the link's connection loop does not answer")
	}
}

// Send queues a frame on the current connection. Audio frames jump ahead of
// everything else. It fails at once with ErrDown when no connection is up.
// It keeps nothing of an audio frame's Payload once it returns (a queued
// one is copied), so a stream can reuse its buffer.
func (l *Link) Send(f voice.Frame) error {
	if err := voice.Check(f); err != nil {
		return err
	}
	l.mu.Lock()
	c := l.cur
	l.mu.Unlock()
	if c == nil {
		return ErrDown
	}
	return c.send(f)
}

// Up reports whether a connection is up and the number of that connection.
func (l *Link) Up() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return false, 0
	}
	return true, l.cur.id
}

// Run connects, and reconnects with exponential backoff and jitter, until ctx
// ends; then it says ##DISCONNECT, waits briefly for the answer, and returns nil.
func (l *Link) Run(ctx context.Context) error {
	l.running.Store(true)
	defer l.running.Store(false)
	failures := 0
	for {
		start := time.Now()
		answered, err := l.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errReconfigured) {
			l.log.Info("reconnecting with the new server settings")
			failures = 0
			continue
		}
		o := l.set.Load()
		if time.Since(start) > max(30*time.Second, o.authTimeout+o.reconnect.Base) {
			failures = 0 // the connection was good for a while: start the backoff over
		}
		if answered && IsNoAnswer(err) {
			// A server that had answered on this connection went silent:
			// the owner is likely waiting, so connect again at once; the
			// backoff applies if that fails too.
			l.log.Warn("the voice server stopped answering; reconnecting now", "err", err)
			failures = 0
			continue
		}
		failures++
		wait := o.reconnect.Delay(failures)
		l.log.Warn("disconnected from the voice server; reconnecting", "err", err, "retry_in", wait.Round(time.Millisecond), "attempt", failures)
		t := time.NewTimer(wait)
		if !l.await(ctx, t.C) {
			t.Stop()
			return nil
		}
	}
}

// await waits for ch, answering Check's probes meanwhile; false means ctx ended.
func (l *Link) await(ctx context.Context, ch <-chan time.Time) bool {
	for {
		select {
		case <-ch:
			return true
		case <-l.reconfigure: // new settings (Update): try them now
			return true
		case r := <-l.probe:
			close(r)
		case <-ctx.Done():
			return false
		}
	}
}

// session runs one connection from dial to close. It reports whether the
// server answered on the connection.
func (l *Link) session(ctx context.Context) (answered bool, err error) {
	o := l.set.Load()
	nc, err := l.dial(ctx, o)
	if err != nil {
		l.state.failed(err)
		return false, err
	}
	token, err := o.token()
	if err != nil {
		nc.Close()
		err = fmt.Errorf("reading the token: %w", err)
		l.state.failed(err)
		return false, err
	}
	if token == "" && !l.noTokenSaid.Swap(true) {
		l.log.Warn("no token is configured; a server that needs one will refuse the connection (set server.token_file, install the systemd credential agenthost.token, or set AGENTHOST_SERVER_TOKEN)")
	}
	auth, err := voice.Auth{Token: token, Params: o.params}.Marshal()
	if err != nil {
		nc.Close()
		l.state.failed(err)
		return false, err
	}
	l.mu.Lock()
	l.seq++
	c := newConn(l.seq, nc, o, l.log)
	c.withheld = l.withheld
	l.mu.Unlock()
	defer c.close()

	authAt := time.Now()
	if err := c.writeNow(voice.Frame{Type: voice.TypeAuth, Task: voice.SystemTask, Payload: auth}); err != nil {
		err = fmt.Errorf("sending AUTH: %w", err)
		l.state.failed(err)
		return false, err
	}
	l.connections.Add(1)
	l.log.Info("connected; AUTH sent", "conn", c.id, "server", o.address, "params", paramList(o.params))
	var wg sync.WaitGroup
	readErr := make(chan error, 1)
	wg.Add(3)
	go func() { defer wg.Done(); c.writeLoop() }()
	l.mu.Lock()
	l.cur = c
	l.mu.Unlock()
	// An Update that came after o was read and before l.cur was set saw no
	// connection up and asked none to make way: this one does, once, now.
	if reconnects(o, l.set.Load()) {
		l.askReconfigure()
	}
	l.state.up()
	l.handling.Enter()
	l.h.Up(c.id)
	l.handling.Leave()
	go func() { defer wg.Done(); readErr <- l.readLoop(c, authAt) }()
	c.ask(whyConnected, nil) // a new connection proves itself
	go func() { defer wg.Done(); c.watchLoop(l) }()

wait:
	for {
		select {
		case err = <-readErr:
			break wait
		case err = <-c.writeErr:
			break wait
		case r := <-l.probe:
			close(r)
		case <-l.reconfigure:
			if !reconnects(o, l.set.Load()) {
				continue // a request left over from an earlier connection: this one has the settings
			}
			c.closing.Store(true)
			c.send(voice.StatusFrame(voice.StatusDisconnect))
			c.flush(time.Second)
			err = errReconfigured
			break wait
		case <-ctx.Done():
			err = l.disconnect(c, readErr)
			break wait
		}
	}
	l.mu.Lock()
	l.cur = nil
	l.mu.Unlock()
	c.close()
	wg.Wait()
	c.ended(err)
	outage := err // nil when the host asked for the end
	if errors.Is(err, errReconfigured) {
		outage = nil
	}
	l.state.down(outage)
	l.h.Down(c.id, outage)
	c.mu.Lock()
	answered = c.live.answered
	c.mu.Unlock()
	return answered, err
}

func (l *Link) dial(ctx context.Context, o *settings) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.dialTimeout, Control: userTimeout(o.tcpUserTimeout), KeepAlive: -1}
	if k := o.tcpKeepalive; k > 0 {
		d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: k, Interval: max(k/3, time.Second), Count: 3}
	}
	if o.tls {
		host, _, _ := net.SplitHostPort(o.address)
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}}
		nc, err := td.DialContext(ctx, "tcp", o.address)
		if err != nil {
			return nil, fmt.Errorf("TLS connection to %s failed: %w (check server.address and server.tls)", o.address, err)
		}
		return nc, nil
	}
	nc, err := d.DialContext(ctx, "tcp", o.address)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the voice server at %s: %w (check server.address and the network)", o.address, err)
	}
	return nc, nil
}

// readLoop delivers frames until the connection fails. The read deadline
// is a backstop for a server that never answers PINGs (the watch loop finds
// one that stopped): a PING goes out after Keepalive without traffic, so a
// healthy server always says something within Keepalive plus a grace.
func (l *Link) readLoop(c *conn, authAt time.Time) error {
	dec := voice.NewDecoder(c.nc, voice.WithMaxFrame(c.o.maxFrame))
	grace := c.o.keepalive + max(30*time.Second, c.o.keepalive/2)
	for {
		c.nc.SetReadDeadline(time.Now().Add(grace))
		f, err := dec.Decode()
		if skipped := dec.Skipped(); skipped > c.skipped {
			l.log.Warn("skipped bytes outside any frame", "conn", c.id, "bytes", skipped-c.skipped)
			c.skipped = skipped
		}
		if err != nil {
			if voice.IsFrameError(err) {
				l.log.Warn("dropped a malformed frame from the server", "conn", c.id, "err", err)
				continue
			}
			if !c.closing.Load() && time.Since(authAt) < c.o.authTimeout && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF)) {
				return l.authFailed(c, "the server closed the connection right after AUTH")
			}
			if errors.Is(err, syscall.ETIMEDOUT) {
				return fmt.Errorf("the path to the server is dead: TCP had no acknowledgement in time (server.liveness.tcp_user_timeout, tcp_keepalive): %w", err)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("the server sent nothing for %s, not even a PONG: %w", grace, err)
			}
			return err
		}
		c.touchRead()
		if f.Type == voice.TypeStatus && f.Task == voice.SystemTask {
			if err := l.status(c, f, authAt); err != nil {
				return err
			}
			continue
		}
		if !f.Type.Known() {
			l.log.Debug("ignored a frame of unknown type", "conn", c.id, "frame", f.String())
			continue
		}
		l.handling.Enter()
		l.h.Frame(c.id, f)
		l.handling.Leave()
	}
}

func (l *Link) status(c *conn, f voice.Frame, authAt time.Time) error {
	text := string(f.Payload)
	switch voice.ClassifyStatus(f.Payload) {
	case voice.StatusKindPong:
		l.log.Debug("PONG", "conn", c.id)
		l.pongSeen.Store(true)
		c.mu.Lock()
		c.answeredLocked()
		c.mu.Unlock()
	case voice.StatusKindPing:
		c.send(voice.StatusFrame(voice.StatusPong))
	case voice.StatusKindDisconnectAck:
		l.log.Info("the server is closing the connection", "conn", c.id, "status", text)
		c.gotDisconnectAck()
	case voice.StatusKindError:
		if time.Since(authAt) < c.o.authTimeout {
			return l.authFailed(c, fmt.Sprintf("the server answered %q", text))
		}
		l.log.Warn("the server reports an error", "conn", c.id, "status", text)
	default:
		l.log.Info("server status", "conn", c.id, "status", voice.StatusInWords(text, c.o.lang))
	}
	return nil
}

// Stats are the link's counters since it was made, for metrics.
type Stats struct {
	Connections  int64 // connections that sent AUTH (reconnects are this minus one)
	AuthFailures int64
}

// Stats reports the link's counters.
func (l *Link) Stats() Stats {
	return Stats{Connections: l.connections.Load(), AuthFailures: l.authFailures.Load()}
}

// errAuth starts the error of a connection the server refused.
var errAuth = errors.New("authentication failed")

func (l *Link) authFailed(c *conn, why string) error {
	l.authFailures.Add(1)
	err := fmt.Errorf("%w: %s; check server.token, server.token_file or AGENTHOST_SERVER_TOKEN, and the AUTH parameters", errAuth, why)
	l.log.Error("the voice server refused the connection", "conn", c.id, "err", err)
	return err
}

// disconnect says goodbye politely: ##DISCONNECT, then wait for the answer,
// the close, or DisconnectWait.
func (l *Link) disconnect(c *conn, readErr <-chan error) error {
	c.closing.Store(true)
	c.send(voice.StatusFrame(voice.StatusDisconnect))
	select {
	case <-c.ackCh:
		l.log.Info("disconnected cleanly", "conn", c.id)
	case err := <-readErr:
		l.log.Info("the server closed the connection", "conn", c.id, "err", err)
	case <-time.After(disconnectWait):
		l.log.Info("no answer to DISCONNECT; closing", "conn", c.id)
	}
	return nil
}

// paramList is the AUTH parameters for the log.
func paramList(ps []voice.Param) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		if slices.Contains(loggedParams, p.Key) {
			fmt.Fprintf(&b, "%s=%q", p.Key, p.Value)
		} else {
			fmt.Fprintf(&b, "%s=(not logged)", p.Key)
		}
	}
	return b.String()
}

// loggedParams are the AUTH parameters of voice protocol §6.1, whose
// values are settings; any other key under server.params may be a secret
// (an API key the server wants), so only its name is logged.
var loggedParams = []string{"voiceid", "lang", "format", "input_audio_format", "mode", "emoji_mode"}
