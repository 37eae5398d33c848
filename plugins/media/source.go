package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// Where the sound comes from: a file under one of the configured folders,
// or an HTTP(S) URL (a file, or internet radio with ICY metadata); either
// may be an m3u or pls playlist, whose first playable entry is played.
// Errors never hold a byte of a fetched body (a page behind a redirect may
// be a router's, or hold a token): they say what kind of problem it was.

const (
	maxPlaylist      = 64 << 10 // bytes of a playlist read
	maxPlaylistDepth = 3        // a playlist naming a playlist ...
	maxICYMeta       = 16 * 255 // the format's own bound
	maxFetches       = 20       // HTTP requests for one sound, redirects included
)

// errTooManyFetches ends an opening that reached maxFetches.
var errTooManyFetches = fmt.Errorf("more than %d fetches for one sound (playlists and redirects)", maxFetches)

// errNotAllowed is a fetch refused for its address (sdk.ErrAddressNotAllowed),
// said without the address: a name the model gave may resolve to one on the
// owner's network, which it must not learn.
var errNotAllowed = errors.New("it, or where it redirects, is not a public address, and the owner has not allowed it in plugins.network.allow")

// errNoFile is the one answer a caller other than the owner gets for a
// path that is missing, outside dirs or not a file, so that the model can
// learn neither which paths exist nor which folders are set.
var errNoFile = errors.New("there is no file to play there (files play only from the folders the owner set in plugins.config.media.dirs)")

// errNoEntry is a playlist none of whose first entries plays.
var errNoEntry = errors.New("has no playable entry")

// source is an opened sound: a local file ffmpeg reads itself, or a
// network stream the plugin reads and pipes to ffmpeg.
type source struct {
	url     string        // what was asked for (a URL as safeURL names it)
	file    string        // a local file, or ""
	body    io.ReadCloser // the network stream (ICY metadata stripped), or nil
	station string        // icy-name, if any
	meta    *icyMeta      // titles from the stream, or nil
}

func (s *source) Close() {
	if s.body != nil {
		s.body.Close()
	}
}

// opener opens sources under the plugin's settings; one serves one
// play_media call, whose requests it counts, with its caller's rights.
type opener struct {
	cfg     config
	owner   bool // the owner calls: any address, and errors that help
	client  *http.Client
	fetches atomic.Int32
}

// newOpener opens for the call of ctx: the owner's reaches any address,
// any other caller's only public ones and those in plugins.network.allow,
// checked as each connection is made (sdk.DialContext).
func newOpener(ctx context.Context, cfg config) *opener {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the address check could not see past a proxy
	tr.ResponseHeaderTimeout = cfg.stall
	tr.DisableCompression = true // sound is compressed; a gzip layer would hide ICY framing
	tr.DialContext = icyDial(sdk.DialContext(ctx, &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}))
	o := &opener{cfg: cfg, owner: sdk.CallerOf(ctx) == sdk.CallerOwner}
	o.client = &http.Client{Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			req.Header.Del("Referer") // it would tell the next host this URL, query and all
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect to %s: is not followed", req.URL.Scheme)
			}
			if o.fetches.Add(1) > maxFetches {
				return errTooManyFetches
			}
			return nil
		}}
	return o
}

// open opens what u names (a path, file:// or http(s)://), following
// playlists.
func (o *opener) open(ctx context.Context, u string) (*source, error) {
	return o.openDepth(ctx, u, "", 0)
}

func (o *opener) openDepth(ctx context.Context, u, base string, depth int) (*source, error) {
	if depth > maxPlaylistDepth {
		return nil, fmt.Errorf("playlists nested deeper than %d", maxPlaylistDepth)
	}
	// A path is not a URL: "100% Hits.mp3" holds a bad escape.
	if filepath.IsAbs(u) {
		return o.openFile(ctx, u, depth)
	}
	parsed, err := url.Parse(u)
	if err != nil && base != "" && !strings.Contains(u, "://") {
		return o.openFile(ctx, filepath.Join(base, u), depth)
	}
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL or a file path", safeName(u))
	}
	switch parsed.Scheme {
	case "http", "https":
		return o.openHTTP(ctx, parsed, depth)
	case "file":
		return o.openFile(ctx, parsed.Path, depth)
	case "":
		if base != "" && !filepath.IsAbs(u) {
			u = filepath.Join(base, u)
		}
		return o.openFile(ctx, u, depth)
	default:
		return nil, fmt.Errorf("%q: only http, https and files are played", safeURL(parsed))
	}
}

// openFile allows only regular files inside the configured folders. The
// owner is told what is wrong; anyone else gets errNoFile for all of it.
func (o *opener) openFile(ctx context.Context, path string, depth int) (*source, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%q is not an absolute path", path)
	}
	real, err := o.resolveFile(path)
	if err != nil {
		if !o.owner {
			return nil, fmt.Errorf("%q: %w", path, errNoFile)
		}
		return nil, err
	}
	if kind := playlistKind(real, ""); kind != "" {
		f, err := os.Open(real)
		if err != nil {
			return nil, fmt.Errorf("cannot open %q: %w", path, err)
		}
		data, err := readPlaylist(f, path)
		f.Close()
		if err != nil {
			return nil, err
		}
		return o.followPlaylist(ctx, data, kind, filepath.Dir(real), path, depth)
	}
	return &source{url: path, file: real}, nil
}

// resolveFile returns the real path of path if it is a regular file inside
// the configured folders, else says why (for the owner).
func (o *opener) resolveFile(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("there is no file %q", path)
		}
		return "", fmt.Errorf("cannot open %q: %w", path, err)
	}
	inside := false
	for _, d := range o.cfg.Dirs {
		if rd, err := filepath.EvalSymlinks(d); err == nil {
			if rel, err := filepath.Rel(rd, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				inside = true
			}
		}
	}
	if !inside {
		if len(o.cfg.Dirs) == 0 {
			return "", fmt.Errorf("%q: no folders are set to play files from (plugins.config.media.dirs)", path)
		}
		return "", fmt.Errorf("%q is outside the folders files are played from (%s)", path, strings.Join(o.cfg.Dirs, ", "))
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("cannot open %q: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%q is not a regular file", path)
	}
	return real, nil
}

func (o *opener) openHTTP(ctx context.Context, u *url.URL, depth int) (*source, error) {
	// The stream outlives the call that opens it; the call's end only
	// cancels the opening.
	reqCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	opening := context.AfterFunc(ctx, cancel)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", safeURL(u), err)
	}
	if o.fetches.Add(1) > maxFetches {
		cancel()
		opening()
		return nil, errTooManyFetches
	}
	req.Header.Set("Icy-MetaData", "1")
	req.Header.Set("User-Agent", "agenthost-media/1")
	resp, err := o.client.Do(req)
	if err != nil {
		opening()
		cancel()
		if errors.Is(err, sdk.ErrAddressNotAllowed) {
			return nil, fmt.Errorf("cannot fetch %s: %w", safeURL(u), errNotAllowed)
		}
		return nil, fmt.Errorf("cannot fetch %s: %w", safeURL(u), unwrapURLError(err))
	}
	resp.Body = &cancelCloser{ReadCloser: resp.Body, cancel: cancel}
	if kind := playlistKind(u.Path, resp.Header.Get("Content-Type")); kind != "" && resp.StatusCode == http.StatusOK {
		// A playlist is read while the call lasts, and no longer than
		// stall_timeout without a byte.
		data, err := readPlaylist(&stallReader{r: resp.Body, c: resp.Body, timeout: o.cfg.stall}, safeURL(u))
		opening()
		resp.Body.Close()
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("reading the playlist %s: %w", safeURL(u), context.Cause(ctx))
		}
		if err != nil {
			return nil, err
		}
		return o.followPlaylist(ctx, data, kind, "", safeURL(u), depth)
	}
	if !opening() {
		resp.Body.Close()
		return nil, fmt.Errorf("cannot fetch %s: %w", safeURL(u), context.Cause(ctx))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %w", safeURL(u), statusError(resp.StatusCode))
	}
	body := &stallReader{r: resp.Body, c: resp.Body, timeout: o.cfg.stall}
	s := &source{url: safeURL(u), station: resp.Header.Get("icy-name"), body: body}
	if mi := resp.Header.Get("icy-metaint"); mi != "" {
		n, err := strconv.Atoi(mi)
		if err != nil || n <= 0 || n > 1<<20 {
			body.Close()
			return nil, fmt.Errorf("%s: its icy-metaint header is not a sane interval", safeURL(u))
		}
		s.meta = &icyMeta{}
		s.body = &icyReader{r: body, c: body, interval: n, left: n, meta: s.meta}
	}
	return s, nil
}

// statusError is an answer other than 200, said by its code (the reason
// phrase is the server's own text).
type statusError int

func (e statusError) Error() string {
	return strings.TrimSpace(fmt.Sprintf("answered %d %s", int(e), http.StatusText(int(e))))
}

// cancelCloser ends the request's context when the body is closed.
type cancelCloser struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelCloser) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// safeURL names u in errors, logs and status: scheme, host and path,
// without the user info and query that may hold a secret (?listen_key=).
func safeURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.Path
}

// safeName is safeURL for a string that may not parse as a URL.
func safeName(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return safeURL(u)
	}
	s, _, _ = strings.Cut(s, "?")
	s, _, _ = strings.Cut(s, "#")
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		authority, path, _ := strings.Cut(rest, "/")
		if i := strings.LastIndex(authority, "@"); i >= 0 {
			s = scheme + "://" + authority[i+1:] + "/" + path
		}
	}
	return s
}

// unwrapURLError drops net/http's "Get <url>:" prefix, which repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// playlistKind says whether name (or the content type) is an m3u or pls
// playlist.
func playlistKind(name, contentType string) string {
	ct, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	switch strings.TrimSpace(ct) {
	case "audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl":
		return "m3u"
	case "audio/x-scpls", "application/pls+xml":
		return "pls"
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".m3u", ".m3u8":
		return "m3u"
	case ".pls":
		return "pls"
	}
	return ""
}

// readPlaylist reads the playlist r, up to maxPlaylist bytes.
func readPlaylist(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxPlaylist+1))
	if err != nil {
		return nil, fmt.Errorf("reading the playlist %s: %v", name, err)
	}
	if len(data) > maxPlaylist {
		return nil, fmt.Errorf("the playlist %s is larger than %d bytes", name, maxPlaylist)
	}
	return data, nil
}

// followPlaylist plays the first entry of the playlist data that opens.
// Entries of a playlist from the network must be http(s) URLs. Its error
// names no entry, only what kind of problem each had: the text is the
// server's, and may be a page that was never a playlist.
func (o *opener) followPlaylist(ctx context.Context, data []byte, kind, base, name string, depth int) (*source, error) {
	entries := parsePlaylist(data, kind)
	if len(entries) == 0 {
		return nil, fmt.Errorf("the playlist %s names nothing to play", name)
	}
	tried := entries[:min(len(entries), 5)]
	var problems []string
	for _, e := range tried {
		var problem string
		if base == "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			problem = "is not an http(s) URL"
		} else {
			s, err := o.openDepth(ctx, e, base, depth+1)
			if err == nil {
				return s, nil
			}
			if errors.Is(err, errTooManyFetches) {
				return nil, err
			}
			problem = entryProblem(err)
		}
		if !slices.Contains(problems, problem) {
			problems = append(problems, problem)
		}
	}
	return nil, fmt.Errorf("the playlist %s %w (its first %d: %s)", name, errNoEntry, len(tried), strings.Join(problems, "; "))
}

// entryProblem says what kind of problem err, a playlist entry's, is.
func entryProblem(err error) string {
	var status statusError
	switch {
	case errors.Is(err, errNotAllowed):
		return "leads to an address that is not public, which the owner has not allowed in plugins.network.allow"
	case errors.As(err, &status):
		return status.Error()
	case errors.Is(err, errNoFile):
		return "is no file to play"
	case errors.Is(err, errNoEntry):
		return "is a playlist with no playable entry"
	case errors.Is(err, errTooManyFetches):
		return err.Error()
	}
	return "could not be opened"
}

// parsePlaylist returns the entries of an m3u or pls playlist, in order.
func parsePlaylist(data []byte, kind string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		switch kind {
		case "m3u":
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		case "pls":
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.HasPrefix(strings.ToLower(k), "file") {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}

// stallReader fails a Read that waits longer than timeout, by closing the
// stream under it. Time spent not reading (paused, ffmpeg busy) does not count.
type stallReader struct {
	r       io.Reader
	c       io.Closer
	timeout time.Duration
	mu      sync.Mutex
	stalled bool
}

func (s *stallReader) Read(p []byte) (int, error) {
	t := time.AfterFunc(s.timeout, func() {
		s.mu.Lock()
		s.stalled = true
		s.mu.Unlock()
		s.c.Close()
	})
	n, err := s.r.Read(p)
	t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled {
		return n, fmt.Errorf("the stream stalled: nothing arrived for %s", s.timeout)
	}
	return n, err
}

func (s *stallReader) Close() error { return s.c.Close() }

// icyMeta holds the latest StreamTitle of an ICY stream.
type icyMeta struct {
	mu    sync.Mutex
	title string
}

func (m *icyMeta) Title() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.title
}

// icyReader strips the ICY metadata blocks (a length byte ×16, every
// interval bytes of sound) and keeps their StreamTitle.
type icyReader struct {
	r        io.Reader
	c        io.Closer
	interval int
	left     int // sound bytes before the next metadata block
	meta     *icyMeta
	buf      [maxICYMeta]byte
}

func (r *icyReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		var n [1]byte
		if _, err := io.ReadFull(r.r, n[:]); err != nil {
			return 0, err
		}
		size := int(n[0]) * 16
		if _, err := io.ReadFull(r.r, r.buf[:size]); err != nil {
			return 0, err
		}
		if t, ok := streamTitle(string(r.buf[:size])); ok {
			r.meta.mu.Lock()
			r.meta.title = t
			r.meta.mu.Unlock()
		}
		r.left = r.interval
	}
	n, err := r.r.Read(p[:min(len(p), r.left)])
	r.left -= n
	return n, err
}

func (r *icyReader) Close() error { return r.c.Close() }

// streamTitle finds StreamTitle='...'; in an ICY metadata block.
func streamTitle(block string) (string, bool) {
	_, rest, ok := strings.Cut(block, "StreamTitle='")
	if !ok {
		return "", false
	}
	t, _, ok := strings.Cut(rest, "';")
	if !ok {
		t = strings.TrimRight(rest, "\x00'")
	}
	return strings.ToValidUTF8(t, ""), true
}
