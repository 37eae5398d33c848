package main

// Tests of opening a source (opener.open), without the decoder or the host.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

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
				o := newOpener(config{stall: tc.stall})
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
