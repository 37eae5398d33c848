package main

import (
	"bytes"
	"context"
	"io"
	"net"
)

// SHOUTcast v1 servers answer "ICY 200 OK" instead of "HTTP/1.0 200 OK",
// which net/http refuses; icyDial makes such an answer an HTTP/1.0 one on
// the connections dial makes. (Plain HTTP only: those servers do not speak
// TLS.)
func icyDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &icyConn{Conn: c}, nil
	}
}

// icyConn rewrites a status line beginning "ICY " to "HTTP/1.0 ".
type icyConn struct {
	net.Conn
	checked bool
	pending []byte // rewritten start not yet read
}

func (c *icyConn) Read(p []byte) (int, error) {
	if !c.checked {
		c.checked = true
		head := make([]byte, 4)
		n, err := io.ReadFull(c.Conn, head)
		head = head[:n]
		if bytes.Equal(head, []byte("ICY ")) {
			head = []byte("HTTP/1.0 ")
		}
		c.pending = head
		if err != nil && n == 0 {
			return 0, err
		}
	}
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
