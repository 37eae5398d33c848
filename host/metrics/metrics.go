// Package metrics is the daemon's Prometheus endpoint (metrics.listen): it
// reads each part's own counters and status at scrape time (the link, the
// calls, plugins, MCP servers, the conversation, the wake word, the
// device), observes the calls as they end, and adds the Go runtime's and
// the process's metrics and agenthost_build_info.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agenthost/agenthost/internal/httpserve"
)

// Server is the part that serves /metrics.
type Server struct {
	addr  string
	hosts []string
	reg   *prometheus.Registry
	log   *slog.Logger
}

// New returns the part that serves the metrics of the parts s names, the
// Go runtime's and the process's on addr, answering the names hosts too
// (metrics.hosts); version is agenthost_build_info's.
func New(addr string, hosts []string, version string, log *slog.Logger, s Sources) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(partCollectors(s, version)...)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Server{addr: addr, hosts: hosts, reg: reg, log: log}
}

// Name implements part.Part.
func (*Server) Name() string { return "metrics endpoint" }

// Metrics connections: a scraper needs one; these bounds are fixed.
const (
	maxConns          = 8
	maxConnsPerClient = 4
)

// Run implements part.Part.
func (s *Server) Run(ctx context.Context, ready func()) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metrics.listen %s: %w (choose another address, or leave metrics.listen empty)", s.addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	s.log.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	ready()
	return httpserve.Serve(ctx, ln, mux, httpserve.Options{
		Name: "the metrics endpoint", MaxConns: maxConns, MaxConnsPerClient: maxConnsPerClient,
		Hosts: s.hosts, HostsSetting: "metrics.hosts",
		ExposedWarning: "the metrics endpoint listens beyond this machine: anyone who can reach it can read the daemon's metrics " +
			"(metrics.listen; keep it on 127.0.0.1, or behind a firewall)",
		Log: s.log.With("component", "metrics"),
	})
}
