package httpserve

import (
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/agenthost/agenthost/internal/clip"
	"github.com/agenthost/agenthost/internal/lograte"
)

// LocalName reports whether a host name (a Host header's or an Origin's
// host, without port) is this machine's: localhost, a name under
// .localhost, or a loopback address.
func LocalName(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ownNames are the names a listener answers to beyond the address a
// request reached and the loopback names: this machine's host name (and
// NAME.local, its mDNS name) and the owner's names, lower case.
func ownNames(configured []string) map[string]bool {
	names := map[string]bool{}
	if h, err := os.Hostname(); err == nil && h != "" {
		h = strings.ToLower(h)
		names[h] = true
		if !strings.Contains(h, ".") {
			names[h+".local"] = true
		}
	}
	for _, n := range configured {
		names[strings.ToLower(strings.TrimSuffix(n, "."))] = true
	}
	return names
}

// ownHostOnly refuses with 403 a request whose Host is not one of the
// listener's own names, on any address: a page of another site that got
// its name to resolve to this machine (DNS rebinding: to 127.0.0.1, or to
// its LAN address when the listener is on the network) would otherwise
// read the answer. Its own names: the address the request reached, a
// loopback name (as through an SSH tunnel), the machine's host name and
// the names in names. setting, when set, is where the owner names more. None of these can be a rebinding page's: it has a
// name of its own site.
func ownHostOnly(h http.Handler, name, setting string, names map[string]bool, logs *lograte.Limiter) http.Handler {
	hint := ""
	if setting != "" {
		hint = " (a name of yours for it goes in " + setting + ")"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		reached := false
		if tcp, ok := local.(*net.TCPAddr); ok {
			ip := net.ParseIP(host)
			reached = ip != nil && ip.Equal(tcp.IP)
		}
		if !reached && !LocalName(host) && !names[host] {
			logs.Warn(name+" refused a request for another host (DNS rebinding?)", "host", clip.String(r.Host, 100), "remote", r.RemoteAddr)
			http.Error(w, "Forbidden: host "+clip.String(r.Host, 100)+" is not this machine's"+hint, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
