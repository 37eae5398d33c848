package netguard

import "net/netip"

// notPublic are the special-purpose ranges (IANA's registries for IPv4 and
// IPv6) that are not a public host on the internet, beyond what netip's
// own predicates name (loopback, private, link-local, multicast,
// unspecified).
var notPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT (RFC 6598), often the ISP's or a VPN's own network
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved, and the broadcast address
		"::/96",           // IPv4-compatible (deprecated)
		"::ffff:0:0:0/96", // IPv4-translated
		"64:ff9b:1::/48",  // local-use IPv4/IPv6 translation
		"100::/64",        // discard
		"2001::/23",       // IETF protocol assignments (Teredo among them)
		"2001:db8::/32",   // documentation
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing SIDs
		"fec0::/10",       // site-local (deprecated)
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64 = netip.MustParsePrefix("64:ff9b::/96") // the well-known NAT64 prefix: an IPv4 address inside
	sixTo = netip.MustParsePrefix("2002::/16")    // 6to4: an IPv4 address inside
)

// Public reports whether a is a public unicast address: one that is not
// this machine, the local network, a carrier's shared range, multicast or
// reserved. An IPv6 address that carries an IPv4 one (mapped, NAT64,
// 6to4) is public only if that IPv4 address is.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return Public(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo.Contains(a):
			return Public(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return true
}
