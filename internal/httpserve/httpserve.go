// Package httpserve serves the daemon's HTTP listeners that a network can
// reach (the MCP endpoint, the metrics): it bounds the connections open
// at once, in all and per client address; closes keep-alive connections
// left idle, and those whose client does not read its answers (a write
// deadline, a bound on requests per connection, and a new connection
// taking the slot of one that waits on its client); gives each request's
// body a deadline that ends once the body is read, so a long response
// stream (SSE) is never cut; refuses a request for a host name not its
// own, on any address (DNS rebinding); and warns when the address is
// beyond loopback.
package httpserve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/agenthost/agenthost/internal/lograte"
)

// Defaults of Options.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultMaxRequests       = 100
)

const (
	maxHeaderBytes = 64 << 10
	shutdownGrace  = 3 * time.Second
	// logPeriod is how often a kind of refusal is logged at most.
	logPeriod = time.Minute
)

// Options configures Serve. Zero durations take the defaults; a zero
// bound is no bound.
type Options struct {
	// Name is the listener in log lines and refusals ("the MCP endpoint").
	Name string
	// MaxConns bounds the connections open at once: one more takes the
	// slot of the connection that has waited longest (a second or more)
	// on its client, idle or not reading its answer, or else waits for a
	// free slot. MaxConnsPerClient bounds those from one client (see
	// clientKey; one more is answered 503 and closed). The settings, when
	// the bounds are a user's, are named in the refusal and the log.
	MaxConns, MaxConnsPerClient               int
	MaxConnsSetting, MaxConnsPerClientSetting string
	// ReadHeaderTimeout bounds reading a request's header, BodyTimeout
	// its body (from the header's end), IdleTimeout the wait for the next
	// request on a keep-alive connection.
	ReadHeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// WriteTimeout bounds each write of an answer: a client that reads
	// none of it for that long loses the connection. A stream (SSE) that
	// its client reads lasts as long as it likes.
	WriteTimeout time.Duration
	// MaxRequests bounds the requests answered on one connection (it is
	// closed after that answer): pipelined requests nobody reads the
	// answers to take no more than that.
	MaxRequests int
	// ExposedWarning, when set, is logged (warn) if the address is beyond
	// loopback.
	ExposedWarning string
	// Hosts are names the listener answers to besides the address a
	// request reached, loopback names and the machine's host name (a name
	// the owner gave it in DNS); HostsSetting names their setting in the
	// refusal.
	Hosts        []string
	HostsSetting string
	// Log receives the warnings and (rate-limited) refusals. Nil discards.
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Exposed reports whether addr is beyond this machine (not loopback;
// ":PORT" is every interface).
func Exposed(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && !tcp.IP.IsLoopback()
}

// Serve serves h on ln until ctx ends, then shuts down (streams still
// open after a short grace are closed). It closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, o Options) error {
	o = o.withDefaults()
	logs := lograte.New(o.Log, logPeriod)
	defer logs.Stop()
	if o.ExposedWarning != "" && Exposed(ln.Addr()) {
		o.Log.Warn(o.ExposedWarning, "addr", ln.Addr().String())
	}
	l := newLimitListener(ln, o, logs)
	srv := &http.Server{
		Handler:           track(ownHostOnly(bodyDeadline(h, o.BodyTimeout), o.Name, o.HostsSetting, ownNames(o.Hosts), logs), o.MaxRequests),
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		cancel()
		err = <-errc
	}
	l.wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

type connKey struct{}

// track marks a connection busy while its request is in the handler (a
// slot taken from it otherwise), and asks for it to be closed after its
// max-th request.
func track(h http.Handler, max int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil {
			h.ServeHTTP(w, r)
			return
		}
		if c.requests.Add(1) >= int64(max) {
			w.Header().Set("Connection", "close")
		}
		c.serving.Store(true)
		defer func() {
			c.idleSince.Store(time.Now().UnixNano())
			c.serving.Store(false)
		}()
		h.ServeHTTP(w, r)
	})
}

// bodyDeadline gives a request with a body a read deadline, lifted once
// the body is read to its end: what follows (a response stream) has none.
// A request without a body (an SSE GET) never has one.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	read bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.read {
		b.read = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
