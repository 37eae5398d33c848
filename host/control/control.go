// Package control owns the daemon's local control socket: HTTP with JSON over
// a unix socket, for the CLI (`agenthost call`, `say`, `talk`, `plugins`),
// buttons and scripts. Other parts of the host add their endpoints to it.
// A request body may hold up to MaxBody bytes (the size of the largest voice
// frame, so any call the server could send can be sent here too).
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/fsperm"
)

// Server serves the control socket.
type Server struct {
	path string
	log  *slog.Logger
	mux  *http.ServeMux

	daemonPID int // whose descendants are refused (peer.go); 0: this process
	refusals  refusalLog
}

// NewServer returns a control server for the socket at path.
func NewServer(path string, log *slog.Logger) *Server {
	return &Server{path: path, log: log.With("component", "control"), mux: http.NewServeMux()}
}

// MaxBody is the largest request body the control socket reads.
const MaxBody = 1 << 20

// HandleJSON adds an endpoint, e.g. "POST /v1/call". in is decoded from the
// request body into a fresh value of the type new returns (nil for none); the
// handler's value is written back as JSON, its error as {"error": "..."}.
// A body over MaxBody is refused with 413.
func HandleJSON[In any](s *Server, pattern string, handler func(ctx context.Context, in In) (any, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var in In
		if r.Body != nil && r.ContentLength != 0 {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "the request body is over the control socket's limit of 1 MiB"})
				return
			case err != nil:
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "reading the request: " + err.Error()})
				return
			}
			if len(bytes.TrimSpace(b)) > 0 {
				if err := json.Unmarshal(b, &in); err != nil {
					writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the request is not valid JSON: " + err.Error()})
					return
				}
			}
		}
		out, err := handler(r.Context(), in)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// Name implements part.Part.
func (s *Server) Name() string { return "control socket" }

// Run listens on the socket until ctx ends. A stale socket left by a crashed
// daemon is replaced; one that answers means another daemon runs.
func (s *Server) Run(ctx context.Context, ready func()) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", s.path, err)
	}
	dir := filepath.Dir(s.path)
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("the folder of %s: %w", s.path, err)
	} else if p := fsperm.DirProblem(fi); p != "" {
		return fmt.Errorf("the control socket's folder %s %s; set conversation.control_socket (or plugins.runtime_dir) to a folder of this user's", dir, p)
	}
	d, err := s.thisDaemon()
	if err != nil {
		return err
	}
	if c, err := net.DialTimeout("unix", s.path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s is in use: is another agenthost running? (set conversation.control_socket to use another path)", s.path)
	}
	os.Remove(s.path)
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.path, err)
	}
	os.Chmod(s.path, 0o660)
	// Every connection is looked at as it is accepted, and every request on
	// one that is not the owner's is refused before the endpoints (peer.go).
	srv := &http.Server{Handler: guard(s.mux), ConnContext: s.admitConns(d), ReadHeaderTimeout: 5 * time.Second}
	s.log.Info("control socket ready", "path", s.path)
	ready()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	os.Remove(s.path)
	return nil
}

// Client talks to a running daemon's control socket.
type Client struct {
	path string
	http *http.Client
}

// ErrNotRunning means no daemon answers on the socket.
var ErrNotRunning = errors.New("no agenthost daemon is running")

// ErrUntrusted means the socket may not be the daemon's: another user
// could have put it there (see fsperm.SocketProblem).
var ErrUntrusted = errors.New("the control socket is not to be trusted")

// NewClient returns a client for the socket at path. Before each
// connection it checks that no other user could have put the socket there. It has no deadline of
// its own: a call lasts as long as the daemon lets the service take, and
// the context of Do bounds everything else.
func NewClient(path string) *Client {
	return &Client{path: path, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if p := fsperm.SocketProblem(path); p != "" {
				return nil, fmt.Errorf("%w: refusing to speak to %s: %s", ErrUntrusted, path, p)
			}
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}
}

// Do sends in (nil for no body) to endpoint ("POST /v1/call") and decodes
// the answer into out. Ending ctx ends the request (and, for a call, the
// call in the daemon).
func (c *Client) Do(ctx context.Context, endpoint string, in, out any) error {
	method, path, _ := bytes.Cut([]byte(endpoint), []byte(" "))
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, string(method), "http://agenthost"+string(path), body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, ErrUntrusted) {
			var ue *url.Error
			if errors.As(err, &ue) {
				return ue.Err
			}
		}
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w (no socket answers at %s)", ErrNotRunning, c.path)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		return errors.New(e.Error)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
