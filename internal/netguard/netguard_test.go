package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestPublic(t *testing.T) {
	for s, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2a00:1450:4001:81a::200e": true, "64:ff9b::808:808": true, "2002:808:808::1": true,
		"127.0.0.1": false, "127.1.2.3": false, "::1": false, "0.0.0.0": false, "::": false, "10.1.2.3": false,
		"172.16.0.1": false, "192.168.1.5": false, "169.254.169.254": false, "100.64.0.1": false, "100.127.255.254": false,
		"fd00::1": false, "fe80::1": false, "224.0.0.1": false, "ff02::1": false, "255.255.255.255": false,
		"::ffff:127.0.0.1": false, "::ffff:192.168.1.1": false, "64:ff9b::7f00:1": false, "2002:c0a8:101::1": false,
		"2001:db8::1": false, "192.0.2.1": false, "198.18.0.1": false, "2001::1": false, "fec0::1": false, "0.1.2.3": false,
	} {
		if got := Public(netip.MustParseAddr(s)); got != want {
			t.Errorf("Public(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestParseRule(t *testing.T) {
	l, err := Parse([]string{"Radio.LAN.", "nas.local:8443", "192.168.1.5", "192.168.1.6:8000", "10.0.0.0/8", "[fd00::1]:80", "fd01::/16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		addr string
		port uint16
		want bool
	}{
		{"radio.lan", "", 1, true}, {"nas.local", "", 8443, true}, {"nas.local", "", 80, false}, {"other.lan", "", 80, false},
		{"", "192.168.1.5", 9, true}, {"", "::ffff:192.168.1.5", 9, true}, {"", "192.168.1.6", 8000, true}, {"", "192.168.1.6", 8001, false},
		{"", "10.9.9.9", 1, true}, {"", "fd00::1", 80, true}, {"", "fd00::1", 81, false}, {"", "fd01:1::1", 5, true}, {"", "192.168.1.7", 5, false},
	} {
		var got bool
		if c.name != "" {
			got = l.allowsName(c.name, c.port)
		} else {
			got = l.allowsAddr(netip.MustParseAddr(c.addr), c.port)
		}
		if got != c.want {
			t.Errorf("%s%s port %d: %v, want %v", c.name, c.addr, c.port, got, c.want)
		}
	}
	for _, bad := range []string{"", "http://nas/", "*.lan", "192.168.1.1/24", "1.2.3.4/33", "nas:0", "nas:70000", "nas:", "a b", "fe80::1%eth0", "fd00::1:80:x", "-a.lan", "user@nas"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted it", bad)
		}
	}
}

// TestDialIsCheckedAfterDNS: a dial to loopback, by address or by a name
// that resolves to it, is refused before it connects, unless the list
// names the address (with its port) or the name.
func TestDialIsCheckedAfterDNS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	address := ln.Addr().String()
	_, port, _ := net.SplitHostPort(address)
	dial := func(p Policy, to string) error {
		c, err := p.DialContext(&net.Dialer{})(context.Background(), "tcp", to)
		if err == nil {
			c.Close()
		}
		return err
	}
	for _, to := range []string{address, "localhost:" + port, "[::ffff:127.0.0.1]:" + port} {
		if err := dial(Policy{}, to); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("dial %s: %v, want ErrNotAllowed", to, err)
		}
		if err := dial(Policy{Anywhere: true}, to); err != nil && strings.Contains(to, "127.0.0.1") {
			t.Errorf("the owner's dial %s: %v", to, err)
		}
	}
	for _, allow := range []string{address, "127.0.0.0/8", "localhost:" + port} {
		to := address
		if strings.HasPrefix(allow, "localhost") {
			to = "localhost:" + port
		}
		if err := dial(Policy{Allow: ParseValid([]string{allow})}, to); err != nil {
			t.Errorf("allowing %s, dial %s: %v", allow, to, err)
		}
	}
	if err := dial(Policy{Allow: ParseValid([]string{"127.0.0.1:1"})}, address); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("allowing another port, dial %s: %v, want ErrNotAllowed", address, err)
	}
}
