//go:build !linux

package link

import (
	"io"
	"net"
)

// socketWriter is what the link's encoder writes to: the connection.
func socketWriter(nc net.Conn) io.Writer { return nc }
