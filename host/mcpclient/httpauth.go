package mcpclient

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/urlmask"
)

// The HTTP transports' parts: the guard (headers only to the server's
// origin, no Referer, bounded bodies) and URLs kept out of errors.

// guardRT is the HTTP transports' guard against a server that misbehaves.
//
// It adds the configured headers to the requests that go to the configured
// server's origin, and to no other: http.Client follows a redirect by
// calling the transport again, so headers added here would go wherever the
// server redirects (net/http strips only those it was given). No request
// carries a Referer: net/http sets one on a redirect, and it holds the
// previous URL's query, where a token may ride.
//
// It bounds a response body that is not an event stream (one JSON-RPC
// message, or an error's text) to maxBody bytes; an event stream is bounded
// per event by the go-sdk (MaxEventSize).
type guardRT struct {
	base    http.RoundTripper
	origin  *url.URL // the configured URL
	headers map[string]string
	maxBody int
}

func (t guardRT) RoundTrip(r *http.Request) (*http.Response, error) {
	own := len(t.headers) > 0 && sameOrigin(r.URL, t.origin)
	if own || r.Header.Get("Referer") != "" {
		r = r.Clone(r.Context())
		r.Header.Del("Referer")
		if own {
			for k, v := range t.headers {
				r.Header.Set(k, v)
			}
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil && t.maxBody > 0 && !eventStream(resp) {
		resp.Body = &boundedBody{rc: resp.Body, max: t.maxBody}
	}
	return resp, err
}

func eventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// boundedBody reads a body up to max bytes; past that, it fails with
// errTooLarge.
type boundedBody struct {
	rc  io.ReadCloser
	max int
	n   int
	err error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) > b.max-b.n+1 {
		p = p[:b.max-b.n+1] // one byte past the bound tells
	}
	n, err := b.rc.Read(p)
	b.n += n
	if b.n > b.max {
		b.err = tooLarge(b.max, "a response")
		return n - (b.n - b.max), b.err
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// tooLarge is the error of a message over the bound (Options.MaxMessage).
func tooLarge(max int, what string) error {
	return fmt.Errorf("the server sent %s over %s, the bound on one MCP message; it is refused (a misbehaving or compromised server?)", what, services.SizeText(max))
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (a default port written or not).
func sameOrigin(a, b *url.URL) bool {
	if a == nil || b == nil || !strings.EqualFold(a.Scheme, b.Scheme) || !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return port(a) == port(b)
}

// scrub readies an error of the connection to be shown: the configured
// URL, which may carry a token in its query or user information, is
// redacted, and an SSE event over the bound is said to be that.
func (s *Session) scrub(err error) error {
	if err != nil && strings.Contains(err.Error(), "SSE event exceeded") { // the go-sdk's MaxEventSize
		err = fmt.Errorf("%w; %v", err, tooLarge(s.o.MaxMessage, "an SSE event"))
	}
	return scrubURL(err, s.o.Server.URL)
}

// scrubURL hides the secrets of the URL raw (urlmask: password, query
// values, fragment) wherever err's message shows them: the URL as
// configured, as net/http prints it (password masked, query kept), or in
// parts.
func scrubURL(err error, raw string) error {
	if err == nil || raw == "" {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), raw, urlmask.String(raw))
	for _, v := range urlmask.Secrets(raw) {
		msg = strings.ReplaceAll(msg, v, urlmask.Mask)
		msg = strings.ReplaceAll(msg, url.QueryEscape(v), urlmask.Mask)
	}
	if msg == err.Error() {
		return err
	}
	return scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }
