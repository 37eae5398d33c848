//go:build testkit

package main

import (
	"fmt"
	"os"
	"syscall"
)

// A binary built with -tags testkit prints on its standard output after
// taking the protocol stream for itself, as a library would (a fake, named
// as such: the real libraries print there only on faults that cannot be
// provoked on demand). None of it may reach the host's protocol.
func init() {
	afterRedirect = func() {
		fmt.Println("testkit: junk printed to stdout by a library")
		syscall.Write(1, []byte("testkit: junk written to fd 1\n"))
		os.Stdout.Sync()
	}
}
