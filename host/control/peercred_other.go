//go:build !linux

package control

import "net"

// identify refuses every caller: only Linux says who is calling here.
func identify(net.Conn, daemon) Verdict {
	return Verdict{Why: "the control socket can tell who is calling only on Linux"}
}

func bootTicks() uint64 { return 0 }

func isSubreaper() bool { return false }
