package household

import (
	"io"
	"log"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/mdns"
)

// service is the household's mDNS service; its TXT record names the
// household by its ID (never its key), so a speaker joins only its own.
const service = "_agenthost-household._udp"

var quiet = log.New(io.Discard, "", 0)

type mdnsServer struct{ s *mdns.Server }

func (m mdnsServer) Close() error { return m.s.Shutdown() }

// advertise answers mDNS queries for h on the LAN.
func advertise(h *Household) (io.Closer, error) {
	host, _ := os.Hostname()
	n := h.ml.LocalNode()
	var ips []net.IP
	if !n.Addr.IsUnspecified() {
		ips = []net.IP{n.Addr}
	}
	zone, err := mdns.NewMDNSService(h.o.Name, service, "", host+".", int(n.Port), ips, []string{"household=" + h.o.Key.ID()})
	if err != nil {
		return nil, err
	}
	s, err := mdns.NewServer(&mdns.Config{Zone: zone, Logger: quiet})
	if err != nil {
		return nil, err
	}
	return mdnsServer{s}, nil
}

// discover asks the LAN for the speakers of household id, for up to wait,
// and returns their gossip addresses.
func discover(id string, wait time.Duration) []string {
	entries := make(chan *mdns.ServiceEntry, 32)
	p := mdns.DefaultParams(service)
	p.Entries, p.Timeout, p.DisableIPv6, p.Logger = entries, wait, true, quiet
	go func() {
		mdns.Query(p)
		close(entries)
	}()
	var out []string
	for e := range entries {
		if e.AddrV4 == nil || !slices.Contains(e.InfoFields, "household="+id) || len(out) >= 64 {
			continue
		}
		out = append(out, net.JoinHostPort(e.AddrV4.String(), strconv.Itoa(e.Port)))
	}
	return out
}
