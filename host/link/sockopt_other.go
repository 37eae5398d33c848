//go:build !linux

package link

import (
	"syscall"
	"time"
)

// userTimeout: TCP_USER_TIMEOUT is Linux's; elsewhere the system's default.
func userTimeout(time.Duration) func(network, address string, rc syscall.RawConn) error {
	return nil
}
