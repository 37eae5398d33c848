// Package metrics is the daemon's Prometheus endpoint (metrics.listen): it
// gathers the collectors each part registers (node_exporter's model), the
// Go runtime's and the process's, and agenthost_build_info. Collect and
// its helpers make a part's collector a single function.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agenthost/agenthost/internal/httpserve"
)

// Collect is a collector that reports what it sends at each scrape.
type Collect func(ch chan<- prometheus.Metric)

// Describe implements prometheus.Collector.
func (f Collect) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(f, ch) }

// Collect implements prometheus.Collector.
func (f Collect) Collect(ch chan<- prometheus.Metric) { f(ch) }

// Gauge sends a gauge of d.
func Gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Counter sends a counter of d.
func Counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// Bool is 1 for true, 0 for false.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var descBuild = prometheus.NewDesc("agenthost_build_info", "The daemon's version; always 1.", []string{"version", "goversion"}, nil)

// Server is the part that serves /metrics.
type Server struct {
	addr string
	reg  *prometheus.Registry
	log  *slog.Logger
}

// New returns the part that serves the parts' collectors, the runtime's and
// the process's on addr; version is agenthost_build_info's.
func New(addr, version string, log *slog.Logger, parts ...prometheus.Collector) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		Collect(func(ch chan<- prometheus.Metric) { Gauge(ch, descBuild, 1, version, runtime.Version()) }))
	reg.MustRegister(parts...)
	return &Server{addr: addr, reg: reg, log: log}
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
		ExposedWarning: "the metrics endpoint listens beyond this machine: anyone who can reach it can read the daemon's metrics " +
			"(metrics.listen; keep it on 127.0.0.1, or behind a firewall)",
		Log: s.log.With("component", "metrics"),
	})
}
