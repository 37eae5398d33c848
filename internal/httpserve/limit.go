package httpserve

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/agenthost/agenthost/internal/lograte"
)

// maxRefusing bounds the connections being answered 503 at once; past it
// a refused connection is closed without an answer.
const maxRefusing = 8

// limitListener counts the open connections per client address and
// refuses one over MaxConnsPerClient; it also says when the connections
// reach MaxConns (netutil.LimitListener, outside it, makes the next wait).
type limitListener struct {
	net.Listener
	o    Options
	logs *lograte.Limiter

	mu       sync.Mutex
	open     int
	perKey   map[string]int
	refusing chan struct{}
	wg       sync.WaitGroup
}

func newLimitListener(ln net.Listener, o Options, logs *lograte.Limiter) *limitListener {
	return &limitListener{Listener: ln, o: o, logs: logs, perKey: map[string]int{}, refusing: make(chan struct{}, maxRefusing)}
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
		l.open++
		full := l.o.MaxConns > 0 && l.open >= l.o.MaxConns
		l.mu.Unlock()
		if full {
			l.logs.Warn(l.o.Name+" has as many connections open as it may; new ones wait for a free one",
				"limit", l.o.MaxConns, "setting", setting(l.o.MaxConnsSetting))
		}
		return &conn{Conn: c, l: l, key: key}, nil
	}
}

func (l *limitListener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perKey[key]--; l.perKey[key] <= 0 {
		delete(l.perKey, key)
	}
}

// refuse answers c 503 naming the bound, then closes it; the answer is
// written after the request is read (up to a bound), so that the client
// sees it rather than a reset.
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

// clientKey is the client a remote address counts for: an IPv4 address,
// or an IPv6 /64 (one host may hold a whole /64).
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

// conn gives its slot back when closed (once).
type conn struct {
	net.Conn
	l    *limitListener
	key  string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}
