package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// ErrNotAllowed is what a dial to an address that is not public, and not
// on the owner's list, fails with (wrapped in a *net.OpError).
var ErrNotAllowed = errors.New("the address is not public and not in the owner's plugins.network.allow")

// Policy is where one call may reach.
type Policy struct {
	// Anywhere: the owner's call may reach any address.
	Anywhere bool
	// Allow is the owner's list, for everyone else.
	Allow List
}

// Permits reports whether a connection to a (after DNS) and port is
// allowed.
func (p Policy) Permits(a netip.Addr, port uint16) bool {
	return p.Anywhere || Public(a) || p.Allow.allowsAddr(a, port)
}

// Control is a net.Dialer Control function that refuses what p does not
// permit: it runs for every address a dial tries, after DNS.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return ErrNotAllowed // not an address this check understands
	}
	if !p.Permits(ap.Addr(), ap.Port()) {
		return ErrNotAllowed
	}
	return nil
}

// DialContext returns base's DialContext held to p. A host the owner's
// list names by name (radio.lan) is dialled as is, whatever it resolves
// to; any other is checked, address by address, as it is connected to.
// base is copied, and its own Control (if any) runs too.
func (p Policy) DialContext(base *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	if p.Anywhere {
		return base.DialContext
	}
	checked := *base
	own, ownCtx := base.Control, base.ControlContext
	checked.Control = nil
	checked.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if err := p.Control(network, address, c); err != nil {
			return err
		}
		switch {
		case ownCtx != nil:
			return ownCtx(ctx, network, address, c)
		case own != nil:
			return own(network, address, c)
		}
		return nil
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(address); err == nil {
			n, err := strconv.ParseUint(port, 10, 16)
			if err == nil && p.Allow.allowsName(host, uint16(n)) {
				return base.DialContext(ctx, network, address)
			}
			// An address given as such is refused before a socket is made,
			// so that the answer is the same where its family is missing.
			if a, err := netip.ParseAddr(host); err == nil && n > 0 && !p.Permits(a, uint16(n)) {
				return nil, &net.OpError{Op: "dial", Net: network, Err: ErrNotAllowed}
			}
		}
		return checked.DialContext(ctx, network, address)
	}
}
