// Package netguard decides which addresses a plugin may reach for a call:
// public ones always, the others only for the owner or where the owner's
// list (plugins.network.allow) names them. The check runs when a
// connection is dialled, after DNS, so that every redirect, every playlist
// entry and a DNS answer that changes between two lookups (rebinding) are
// all held to it.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one entry of the owner's list: a host name, or an address range,
// with a port or any port.
type Rule struct {
	name   string       // lower case, without a trailing dot; "" for a range
	prefix netip.Prefix // valid for an address or a range
	port   uint16       // 0: any port
}

// List is the owner's list.
type List []Rule

// Example says what an entry may look like, for errors.
const Example = "a host name, an address or a CIDR range, with an optional port, like radio.lan, 192.168.1.5:8000 or 192.168.1.0/24"

// ParseRule reads one entry: NAME, NAME:PORT, ADDRESS, ADDRESS:PORT,
// [IPv6]:PORT or a CIDR range. It refuses URLs, wildcards, ranges with
// host bits set and anything else, saying why.
func ParseRule(s string) (Rule, error) {
	switch {
	case s == "":
		return Rule{}, errors.New("it is empty")
	case strings.ContainsAny(s, " \t\r\n"):
		return Rule{}, errors.New("it holds a space")
	case strings.Contains(s, "://"):
		return Rule{}, errors.New("it is a URL; give its host (and port) only")
	case strings.ContainsAny(s, "*@?#"):
		return Rule{}, errors.New("it holds *, @, ? or #")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Rule{}, errors.New("it is not a CIDR range")
		}
		if p.Masked() != p {
			return Rule{}, fmt.Errorf("the range has bits set past its length; write %s", p.Masked())
		}
		return Rule{prefix: p}, nil
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		var err error
		if host, port, err = net.SplitHostPort(s); err != nil {
			return Rule{}, errors.New("it is not HOST:PORT")
		}
	}
	r := Rule{}
	if port != "" || strings.HasSuffix(s, ":") {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return Rule{}, fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		r.port = uint16(n)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Rule{}, errors.New("an address with a zone (%) cannot be allowed")
		}
		a = a.Unmap()
		r.prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	if strings.HasPrefix(s, "[") || strings.Contains(host, ":") {
		return Rule{}, errors.New("it is not an IPv6 address")
	}
	if !hostName(host) {
		return Rule{}, errors.New("it is not a host name")
	}
	r.name = strings.ToLower(strings.TrimSuffix(host, "."))
	return r, nil
}

// hostName reports whether s is a DNS host name: dot-separated labels of
// letters, digits and inner hyphens (an underscore too, as some LANs use).
func hostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Parse reads the owner's list; the error names the first bad entry.
func Parse(entries []string) (List, error) {
	l := make(List, 0, len(entries))
	for i, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, fmt.Errorf("item %d, %q: %v", i+1, e, err)
		}
		l = append(l, r)
	}
	return l, nil
}

// ParseValid reads the entries that parse and drops the others: the host
// has checked them already, so a bad one is only ever not allowed.
func ParseValid(entries []string) List {
	l := make(List, 0, len(entries))
	for _, e := range entries {
		if r, err := ParseRule(e); err == nil {
			l = append(l, r)
		}
	}
	return l
}

// allowsName reports whether the list names host (as a URL gives it) with
// port.
func (l List) allowsName(host string, port uint16) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range l {
		if r.name != "" && r.name == host && (r.port == 0 || r.port == port) {
			return true
		}
	}
	return false
}

// allowsAddr reports whether the list holds a and port.
func (l List) allowsAddr(a netip.Addr, port uint16) bool {
	a = a.Unmap().WithZone("")
	for _, r := range l {
		if r.prefix.IsValid() && r.prefix.Contains(a) && (r.port == 0 || r.port == port) {
			return true
		}
	}
	return false
}
