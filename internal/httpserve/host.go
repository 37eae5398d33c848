package httpserve

import (
	"net"
	"net/http"
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

// localHostOnly refuses with 403 a request that reached a loopback address
// but names another host: a page of another site that got its name to
// resolve to 127.0.0.1 (DNS rebinding) would otherwise read the answer.
// Requests that came over the network name whatever host they reached.
func localHostOnly(h http.Handler, name string, logs *lograte.Limiter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if tcp, ok := local.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !LocalName(host) {
				logs.Warn(name+" refused a request for another host (DNS rebinding?)", "host", clip.String(r.Host, 100), "remote", r.RemoteAddr)
				http.Error(w, "Forbidden: host "+clip.String(r.Host, 100)+" is not this machine's", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
