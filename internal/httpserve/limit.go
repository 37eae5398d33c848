package httpserve

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/internal/lograte"
)

// maxRefusing bounds the connections being answered 503 at once; past it
// a refused connection is closed without an answer.
const maxRefusing = 8

// maxRefusedHead is the most of a refused connection's request head read
// before the answer.
const maxRefusedHead = 16 << 10

const (
	// peerGrace is how long a connection must have waited on its peer
	// (idle, or in a write the peer does not read) before a new one may
	// take its slot.
	peerGrace = time.Second
	// recheck is how often a connection waiting for a slot looks again
	// for one that has waited on its peer for peerGrace.
	recheck = 250 * time.Millisecond
	// writeChunk is the most written under one write deadline.
	writeChunk = 64 << 10
	// sendBuffer is the socket send buffer asked for (Linux doubles it):
	// what a peer that does not read leaves in this machine's memory.
	sendBuffer = 64 << 10
)

// limitListener counts the open connections per client address and
// refuses one over MaxConnsPerClient. When MaxConns are open, a new one
// takes the slot of the connection that has waited longest on its peer
// (idle, or with an answer the peer does not read), or else waits for a
// free one.
type limitListener struct {
	net.Listener
	o    Options
	logs *lograte.Limiter

	mu       sync.Mutex
	open     int
	perKey   map[string]int
	conns    map[*conn]struct{}
	freed    chan struct{} // a slot was freed (one pending signal)
	closed   chan struct{}
	closing  sync.Once
	refusing chan struct{}
	wg       sync.WaitGroup
}

func newLimitListener(ln net.Listener, o Options, logs *lograte.Limiter) *limitListener {
	return &limitListener{Listener: ln, o: o, logs: logs, perKey: map[string]int{}, conns: map[*conn]struct{}{},
		freed: make(chan struct{}, 1), closed: make(chan struct{}), refusing: make(chan struct{}, maxRefusing)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr())
		l.mu.Lock()
		if n := l.perKey[key]; l.o.MaxConnsPerClient > 0 && n >= l.o.MaxConnsPerClient {
			l.mu.Unlock()
			l.refuse(c, key, n)
			continue
		}
		l.perKey[key]++
		l.mu.Unlock()
		if err := l.acquire(); err != nil {
			c.Close()
			l.mu.Lock()
			l.dropKey(key)
			l.mu.Unlock()
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(sendBuffer)
		}
		cn := &conn{Conn: c, l: l, key: key}
		cn.idleSince.Store(time.Now().UnixNano())
		l.mu.Lock()
		l.conns[cn] = struct{}{}
		l.mu.Unlock()
		return cn, nil
	}
}

// acquire takes a slot. When all are taken it closes the connection that
// has waited longest on its peer, or else waits until one is freed or has
// waited on its peer for peerGrace.
func (l *limitListener) acquire() error {
	warned := false
	for {
		l.mu.Lock()
		if l.o.MaxConns <= 0 || l.open < l.o.MaxConns {
			l.open++
			l.mu.Unlock()
			return nil
		}
		victim, why := l.victimLocked(time.Now())
		l.mu.Unlock()
		if victim != nil {
			l.logs.Warn(l.o.Name+" has as many connections open as it may; closed the one that waited longest on its client to make room",
				"closed", victim.key, "why", why, "limit", l.o.MaxConns, "setting", setting(l.o.MaxConnsSetting))
			victim.Close()
			continue
		}
		if !warned {
			warned = true
			l.logs.Warn(l.o.Name+" has as many connections open as it may, all busy; a new one waits for a free one",
				"limit", l.o.MaxConns, "setting", setting(l.o.MaxConnsSetting))
		}
		t := time.NewTimer(recheck)
		select {
		case <-l.freed:
		case <-t.C:
		case <-l.closed:
			t.Stop()
			return net.ErrClosed
		}
		t.Stop()
	}
}

// victimLocked is the connection that has waited longest on its peer, at
// least peerGrace: idle between requests (or before the first), or in a
// write the peer does not read. A connection whose request is being
// answered and which is not stuck in a write is never taken.
func (l *limitListener) victimLocked(now time.Time) (*conn, string) {
	var victim *conn
	var oldest int64
	why := ""
	grace := now.Add(-peerGrace).UnixNano()
	for c := range l.conns {
		since, what := c.writeSince.Load(), "its client does not read the answer"
		if since == 0 {
			if c.serving.Load() {
				continue
			}
			since, what = c.idleSince.Load(), "idle"
		}
		if since <= grace && (victim == nil || since < oldest) {
			victim, oldest, why = c, since, what
		}
	}
	return victim, why
}

// Close closes the listener and ends a wait for a slot.
func (l *limitListener) Close() error {
	l.closing.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

func (l *limitListener) release(c *conn) {
	l.mu.Lock()
	l.open--
	delete(l.conns, c)
	l.dropKey(c.key)
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

func (l *limitListener) dropKey(key string) {
	if l.perKey[key]--; l.perKey[key] <= 0 {
		delete(l.perKey, key)
	}
}

// refuse answers c 503 naming the bound, then closes it. The answer is
// written once the request's head has come (an HTTP client drops bytes
// that come before it wrote its request), and the rest is read (up to a
// bound) before the close, so that the client sees it rather than a reset.
func (l *limitListener) refuse(c net.Conn, key string, n int) {
	l.logs.Warn(l.o.Name+" refused a connection: too many from one address",
		"remote", key, "open", n, "setting", setting(l.o.MaxConnsPerClientSetting))
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if !readHead(c) {
			return
		}
		body := fmt.Sprintf("Service Unavailable: %s has %d connections from %s open, its limit per client%s; close some or try again later\n",
			l.o.Name, n, key, named(l.o.MaxConnsPerClientSetting))
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"+
			"Retry-After: 5\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// wait waits for the refusals being answered.
func (l *limitListener) wait() { l.wg.Wait() }

func setting(s string) string {
	if s == "" {
		return "(fixed)"
	}
	return s
}

func named(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// clientKey is the client a remote address counts for: an IPv4 address
// (/32: a host rarely holds more than one, and a /24 is often a whole
// network of other clients behind one provider), or an IPv6 /64 (one host
// may hold a whole /64, and often does). Loopback addresses count each for
// itself: every local process is this machine alike, one key for all of
// them would let one local client lock out the local scraper, and the
// bound that holds for them is MaxConns with its eviction.
func clientKey(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := tcp.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return tcp.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// conn gives its slot back when closed (once), and bounds each write: a
// peer that reads nothing of an answer for WriteTimeout loses the
// connection. A stream that its peer reads is never cut.
type conn struct {
	net.Conn
	l    *limitListener
	key  string
	once sync.Once

	serving    atomic.Bool  // a request is in the handler
	requests   atomic.Int64 // requests begun on the connection
	idleSince  atomic.Int64 // unix ns: accepted, or the last request's handler returned
	writeSince atomic.Int64 // unix ns: the write under way began; 0 = none
}

func (c *conn) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		now := time.Now()
		c.writeSince.Store(now.UnixNano())
		c.Conn.SetWriteDeadline(now.Add(c.l.o.WriteTimeout))
		m, err := c.Conn.Write(chunk)
		c.writeSince.Store(0)
		n += m
		p = p[m:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// readHead reads from c up to the blank line that ends a request's head,
// at most maxRefusedHead bytes: whether it came.
func readHead(c net.Conn) bool {
	var got []byte
	buf := make([]byte, 512)
	for len(got) < maxRefusedHead {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if bytes.Contains(got, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
