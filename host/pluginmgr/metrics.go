package pluginmgr

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
	"github.com/agenthost/agenthost/host/supervise"
)

var (
	descPlugin   = prometheus.NewDesc("agenthost_plugin_state", "1 for the state each plugin is in.", []string{"plugin", "state"}, nil)
	descRestarts = prometheus.NewDesc("agenthost_plugin_restarts_total", "Restarts of a plugin after it crashed.", []string{"plugin"}, nil)
	descParks    = prometheus.NewDesc("agenthost_plugin_parks_total", "Times a plugin was parked after crashing repeatedly.", []string{"plugin"}, nil)
)

// Collectors implements part.Collecting: each plugin's state, restarts
// and parks.
func (m *Manager) Collectors() []prometheus.Collector {
	return []prometheus.Collector{metrics.Collect(func(ch chan<- prometheus.Metric) {
		for _, p := range m.Status() {
			for _, st := range supervise.States {
				metrics.Gauge(ch, descPlugin, metrics.Bool(p.State == st), p.Name, st)
			}
			metrics.Counter(ch, descRestarts, float64(p.Restarts), p.Name)
			metrics.Counter(ch, descParks, float64(p.Parks), p.Name)
		}
	})}
}
