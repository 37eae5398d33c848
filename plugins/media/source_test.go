package main

// Tests of opening a source (opener.open), without the decoder or the host.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// asOwner is the context of the owner's call: these tests' servers are on
// loopback.
var asOwner = pluginv1.WithCallInfo(context.Background(), pluginv1.CallInfo{Caller: pluginv1.Caller_CALLER_OWNER})

// silentPlaylistServer answers one request on conn with a playlist's
// headers and then sends nothing; done is closed once the client has
// closed the connection.
func silentPlaylistServer(conn net.Conn, done chan<- struct{}) {
	defer close(done)
	defer conn.Close()
	if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
		return
	}
	io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: audio/x-mpegurl\r\nContent-Length: 100\r\n\r\n")
	io.Copy(io.Discard, conn) // until the client closes it
}

// TestAPlaylistWhoseBodyNeverComesDoesNotHangPlayMedia: a server that
// sends a playlist's headers and never its body ends the opening when the
// call ends, or else after stall_timeout, and the connection is closed
// (the bubble ends only when no goroutine is left).
func TestAPlaylistWhoseBodyNeverComesDoesNotHangPlayMedia(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall time.Duration
		want  string
	}{
		{"when the call ends", time.Hour, "context canceled"},
		{"after stall_timeout", 10 * time.Second, "stalled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOpener(asOwner, config{stall: tc.stall})
				srvConn, cliConn := net.Pipe()
				closed := make(chan struct{})
				go silentPlaylistServer(srvConn, closed)
				o.client.Transport.(*http.Transport).DialContext = func(context.Context, string, string) (net.Conn, error) {
					return cliConn, nil
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errc := make(chan error, 1)
				go func() {
					s, err := o.open(ctx, "http://radio.example/list.m3u")
					if s != nil {
						s.Close()
					}
					errc <- err
				}()
				synctest.Wait() // the headers have come; the body does not
				if tc.stall == time.Hour {
					cancel()
				}
				err := <-errc
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("open: %v, want an error saying %q", err, tc.want)
				}
				<-closed
			})
		})
	}
}

// TestAFailedFetchDoesNotNameTheURLsToken: the host logs play_media's
// errors at INFO ("call failed"), so they name a URL by scheme, host and
// path only: a token in its query (or its user info) is never in them, nor
// in the name a source is known by (play_media's later errors use it).
func TestAFailedFetchDoesNotNameTheURLsToken(t *testing.T) {
	const secret = "SECRET123"
	mux := http.NewServeMux()
	mux.HandleFunc("/forbidden.mp3", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	})
	mux.HandleFunc("/moved.mp3", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/forbidden.mp3?listen_key="+secret, http.StatusFound)
	})
	mux.HandleFunc("/list.pls", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "[playlist]\nFile1=http://%s/forbidden.mp3?listen_key=%s\nFile2=rtsp://%s/live?listen_key=%s\n",
			r.Host, secret, r.Host, secret)
	})
	mux.HandleFunc("/live.mp3", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write(make([]byte, 1000))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	o := newOpener(asOwner, config{stall: time.Minute})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, u := range []string{
		srv.URL + "/forbidden.mp3?listen_key=" + secret,
		"http://listener:" + secret + "@" + host + "/forbidden.mp3",
		"http://" + secret + "@" + host + "/forbidden.mp3",
		srv.URL + "/moved.mp3?listen_key=" + secret,
		srv.URL + "/list.pls?listen_key=" + secret,
		"http://127.0.0.1:1/live.mp3?listen_key=" + secret,
		"gopher://radio.example/live?listen_key=" + secret,
	} {
		s, err := o.open(context.Background(), u)
		if s != nil {
			s.Close()
		}
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("open %s: %v, want an error without the token", u, err)
		}
	}
	s, err := o.open(context.Background(), srv.URL+"/live.mp3?listen_key="+secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.url != srv.URL+"/live.mp3" {
		t.Errorf("the source is named %q, want %q", s.url, srv.URL+"/live.mp3")
	}
}

// TestAFileWithAPercentSignInItsNamePlays: a path is not parsed as a URL
// (where "% H" is a bad escape), whether given or named by a local
// playlist.
func TestAFileWithAPercentSignInItsNamePlays(t *testing.T) {
	dir := t.TempDir()
	song := filepath.Join(dir, "100% Hits.mp3")
	list := filepath.Join(dir, "best of 50%.m3u")
	for p, data := range map[string]string{song: "sound", list: "#EXTM3U\n100% Hits.mp3\n"} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := filepath.EvalSymlinks(song)
	if err != nil {
		t.Fatal(err)
	}
	o := newOpener(asOwner, config{Dirs: []string{dir}, stall: time.Minute})
	for _, p := range []string{song, list} {
		s, err := o.open(context.Background(), p)
		if err != nil {
			t.Errorf("open %q: %v", p, err)
			continue
		}
		if s.file != want {
			t.Errorf("open %q gave the file %q, want %q", p, s.file, want)
		}
		s.Close()
	}
}

// TestOnePlayMediaFetchesAtMostTwentyTimes: playlists naming playlists
// (each entry behind a redirect) could make one play_media fetch hundreds
// of times; it stops at maxFetches requests, redirects included.
func TestOnePlayMediaFetchesAtMostTwentyTimes(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		if to, ok := strings.CutPrefix(r.URL.Path, "/hop/"); ok {
			http.Redirect(w, r, "/list/"+to, http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "audio/x-mpegurl")
		for i := range 5 {
			fmt.Fprintf(w, "http://%s/hop%s/%d\n", r.Host, strings.TrimPrefix(r.URL.Path, "/list"), i)
		}
	}))
	defer srv.Close()
	_, err := newOpener(asOwner, config{stall: time.Minute}).open(context.Background(), srv.URL+"/list/top")
	mu.Lock()
	defer mu.Unlock()
	if requests > 20 {
		t.Errorf("one open made %d requests, want at most 20", requests)
	}
	if err == nil || !strings.Contains(err.Error(), "more than 20 fetches") {
		t.Errorf("open: %v, want an error saying it stopped after 20 fetches", err)
	}
}
