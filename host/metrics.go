package host

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/httpserve"
)

// Version is the daemon's version for agenthost_build_info (cmd sets it).
var Version = "dev"

// metrics is what the daemon exports to Prometheus: counters that the
// components keep (read at scrape time) and the calls, observed as they end.
type metrics struct {
	h        *Host
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

var (
	descUp           = prometheus.NewDesc("agenthost_link_up", "1 while the link to the voice server is up.", nil, nil)
	descConnections  = prometheus.NewDesc("agenthost_link_connections_total", "Connections to the voice server that sent AUTH (reconnects are all but the first).", nil, nil)
	descAuthFailures = prometheus.NewDesc("agenthost_link_auth_failures_total", "Connections the voice server refused after AUTH.", nil, nil)
	descOutages      = prometheus.NewDesc("agenthost_link_outages_total", "Connections that were up and went down unasked, by reason (no_answer: a PING went unanswered within server.liveness.answer_timeout).", []string{"reason"}, nil)
	descLastOutage   = prometheus.NewDesc("agenthost_link_last_outage_timestamp_seconds", "When the latest outage began (Unix time); 0 if none.", nil, nil)
	descRegisters    = prometheus.NewDesc("agenthost_registers_sent_total", "MCP register messages sent to the voice server.", nil, nil)
	descServices     = prometheus.NewDesc("agenthost_services", "Services registered now.", nil, nil)
	descInFlight     = prometheus.NewDesc("agenthost_calls_in_flight", "Calls running now.", nil, nil)
	descPlugin       = prometheus.NewDesc("agenthost_plugin_state", "1 for the state each plugin is in.", []string{"plugin", "state"}, nil)
	descRestarts     = prometheus.NewDesc("agenthost_plugin_restarts_total", "Restarts of a plugin after it crashed.", []string{"plugin"}, nil)
	descParks        = prometheus.NewDesc("agenthost_plugin_parks_total", "Times a plugin was parked after crashing repeatedly.", []string{"plugin"}, nil)
	descMCPState     = prometheus.NewDesc("agenthost_mcp_server_state", "1 for the state each MCP server is in.", []string{"server", "transport", "state"}, nil)
	descMCPTools     = prometheus.NewDesc("agenthost_mcp_server_tools", "Tools an MCP server offers now.", []string{"server"}, nil)
	descMCPRestarts  = prometheus.NewDesc("agenthost_mcp_server_restarts_total", "Restarts of an MCP server after it ended or could not be reached.", []string{"server"}, nil)
	descFramesIn     = prometheus.NewDesc("agenthost_audio_frames_received_total", "Reply audio frames received from the voice server.", nil, nil)
	descFramesOut    = prometheus.NewDesc("agenthost_audio_frames_sent_total", "Microphone audio frames sent to the voice server.", nil, nil)
	descUnderruns    = prometheus.NewDesc("agenthost_audio_underruns_total", "Frames of silence played because a reply was late.", nil, nil)
	descBargeIns     = prometheus.NewDesc("agenthost_audio_barge_ins_total", "Replies cut short by a new turn.", nil, nil)
	descBuild        = prometheus.NewDesc("agenthost_build_info", "The daemon's version; always 1.", []string{"version", "goversion"}, nil)
)

var pluginStates = []string{supervise.StateStarting, supervise.StateRunning, supervise.StateIdle, supervise.StateRestarting,
	supervise.StateParked, supervise.StateBroken, supervise.StateDown, supervise.StateStopped}

func newMetrics(h *Host) *metrics {
	m := &metrics{h: h, reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_calls_total",
			Help: "Calls from the voice server by service and outcome (success or error)."}, []string{"service", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_call_duration_seconds",
			Help:    "The host's time for a call from the voice server: dispatch, the provider, queueing the result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"service"}),
	}
	m.reg.MustRegister(m, m.calls, m.duration, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(deviceCollector{h})
	h.OnCall(m.observe)
	return m
}

func (m *metrics) observe(r CallRecord) {
	outcome := "success"
	if !r.Success {
		outcome = "error"
	}
	service := r.Method
	if _, known := m.h.reg.Lookup(service); !known {
		service = "(unknown)" // the server's mistakes must not grow the label set
	}
	m.calls.WithLabelValues(service, outcome).Inc()
	m.duration.WithLabelValues(service).Observe(r.Took.Seconds())
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(m, ch) }

// Collect implements prometheus.Collector: the components' counters now.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	h := m.h
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	up, _ := h.link.Up()
	gauge(descUp, b2f(up))
	ls := h.link.Stats()
	counter(descConnections, float64(ls.Connections))
	counter(descAuthFailures, float64(ls.AuthFailures))
	st := h.link.State()
	for _, r := range link.Reasons {
		counter(descOutages, float64(st.ByReason[r]), r)
	}
	last := 0.0
	if st.LastOutageAt != nil {
		last = float64(st.LastOutageAt.UnixMilli()) / 1e3
	}
	gauge(descLastOutage, last)
	counter(descRegisters, float64(h.calls.Registers()))
	gauge(descServices, float64(len(h.reg.Names())))
	gauge(descInFlight, float64(h.disp.InFlight()))
	if h.plugins != nil {
		for _, p := range h.plugins.Status() {
			for _, st := range pluginStates {
				gauge(descPlugin, b2f(p.State == st), p.Name, st)
			}
			counter(descRestarts, float64(p.Restarts), p.Name)
			counter(descParks, float64(p.Parks), p.Name)
		}
	}
	if h.mcpSrv != nil {
		for _, s := range h.mcpSrv.Status() {
			for _, st := range pluginStates {
				gauge(descMCPState, b2f(s.State == st), s.Name, s.Transport, st)
			}
			gauge(descMCPTools, float64(len(s.Tools)), s.Name)
			counter(descMCPRestarts, float64(s.Restarts), s.Name)
		}
	}
	if h.conv != nil {
		cs := h.conv.Stats()
		counter(descFramesIn, float64(cs.FramesIn))
		counter(descFramesOut, float64(cs.FramesOut))
		counter(descUnderruns, float64(cs.Underruns))
		counter(descBargeIns, float64(cs.BargeIns))
	}
	m.collectWake(gauge, counter)
	gauge(descBuild, 1, Version, runtime.Version())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// MetricsServer returns the component that serves /metrics on
// metrics.listen, or nil when that is empty (the default).
func (h *Host) MetricsServer() Component {
	addr := h.cfg.Metrics.Listen
	if addr == "" {
		return nil
	}
	return metricsServer{addr: addr, m: newMetrics(h), h: h}
}

type metricsServer struct {
	addr string
	m    *metrics
	h    *Host
}

func (metricsServer) Name() string { return "metrics endpoint" }

// Metrics connections: a scraper needs one; these bounds are fixed.
const (
	metricsMaxConns          = 8
	metricsMaxConnsPerClient = 4
)

func (s metricsServer) Run(ctx context.Context, ready func()) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metrics.listen %s: %w (choose another address, or leave metrics.listen empty)", s.addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	s.h.log.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	ready()
	return httpserve.Serve(ctx, ln, mux, httpserve.Options{
		Name: "the metrics endpoint", MaxConns: metricsMaxConns, MaxConnsPerClient: metricsMaxConnsPerClient,
		ExposedWarning: "the metrics endpoint listens beyond this machine: anyone who can reach it can read the daemon's metrics " +
			"(metrics.listen; keep it on 127.0.0.1, or behind a firewall)",
		Log: s.h.log.With("component", "metrics"),
	})
}
