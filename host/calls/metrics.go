package calls

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
)

var (
	descRegisters = prometheus.NewDesc("agenthost_registers_sent_total", "MCP register messages sent to the voice server.", nil, nil)
	descServices  = prometheus.NewDesc("agenthost_services", "Services registered now.", nil, nil)
	descInFlight  = prometheus.NewDesc("agenthost_calls_in_flight", "Calls running now.", nil, nil)
)

// Collectors implements part.Collecting: the register, the calls in flight,
// and each call from the voice server, observed as it ends (from now on:
// call it before the link runs).
func (c *Calls) Collectors() []prometheus.Collector {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_calls_total",
		Help: "Calls from the voice server by service and outcome (success or error)."}, []string{"service", "outcome"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_call_duration_seconds",
		Help:    "The host's time for a call from the voice server: dispatch, the provider, queueing the result.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"service"})
	c.OnCall(func(r Record) {
		outcome := "success"
		if !r.Success {
			outcome = "error"
		}
		service := r.Method
		if _, known := c.reg.Lookup(service); !known {
			service = "(unknown)" // the server's mistakes must not grow the label set
		}
		calls.WithLabelValues(service, outcome).Inc()
		duration.WithLabelValues(service).Observe(r.Took.Seconds())
	})
	return []prometheus.Collector{calls, duration, metrics.Collect(func(ch chan<- prometheus.Metric) {
		metrics.Counter(ch, descRegisters, float64(c.Registers()))
		metrics.Gauge(ch, descServices, float64(len(c.reg.Names())))
		metrics.Gauge(ch, descInFlight, float64(c.disp.InFlight()))
	})}
}
