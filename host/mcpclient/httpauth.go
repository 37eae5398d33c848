package mcpclient

import (
	"net/http"
	"net/url"
	"strings"
)

// The HTTP transports' parts: configured headers and URLs kept out of errors.

// headerRT adds the configured headers to the requests that go to the
// configured server's origin, and to no other: http.Client follows a
// redirect by calling the transport again, so headers added here would go
// wherever the server redirects (net/http strips only those it was given).
// No request carries a Referer: net/http sets one on a redirect, and it
// holds the previous URL's query, where a token may ride.
type headerRT struct {
	base    http.RoundTripper
	origin  *url.URL // the configured URL
	headers map[string]string
}

func (t headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	own := len(t.headers) > 0 && sameOrigin(r.URL, t.origin)
	if !own && r.Header.Get("Referer") == "" {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Del("Referer")
	if own {
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
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

// scrub replaces the configured URL, which may carry a token in its query
// or user information, with its redacted form in an error's text.
func (s *Session) scrub(err error) error { return scrubURL(err, s.o.Server.URL) }

// scrubURL hides the secrets of the URL raw (its password and query
// values) wherever err's message shows them: the URL as configured, as
// net/http prints it (password masked, query kept), or in parts.
func scrubURL(err error, raw string) error {
	if err == nil || raw == "" {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), raw, redactURL(raw))
	if u, perr := url.Parse(raw); perr == nil {
		var secrets []string
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for _, vs := range u.Query() {
			secrets = append(secrets, vs...)
		}
		for _, q := range strings.Split(u.RawQuery, "&") {
			if _, v, ok := strings.Cut(q, "="); ok {
				secrets = append(secrets, v) // as written, escapes and all
			}
		}
		for _, v := range secrets {
			if len(v) >= 4 { // shorter values are not secrets, and would mask common words
				msg = strings.ReplaceAll(msg, v, "***")
				msg = strings.ReplaceAll(msg, url.QueryEscape(v), "***")
			}
		}
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

// redactURL hides user information and query values (tokens) in a URL.
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(an invalid URL)"
	}
	if u.User != nil {
		u.User = url.User("***")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"***"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
