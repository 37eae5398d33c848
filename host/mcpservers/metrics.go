package mcpservers

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
	"github.com/agenthost/agenthost/host/supervise"
)

var (
	descState    = prometheus.NewDesc("agenthost_mcp_server_state", "1 for the state each MCP server is in.", []string{"server", "transport", "state"}, nil)
	descTools    = prometheus.NewDesc("agenthost_mcp_server_tools", "Tools an MCP server offers now.", []string{"server"}, nil)
	descRestarts = prometheus.NewDesc("agenthost_mcp_server_restarts_total", "Restarts of an MCP server after it ended or could not be reached.", []string{"server"}, nil)
)

// Collectors implements part.Collecting: each server's state, tools and
// restarts.
func (m *Servers) Collectors() []prometheus.Collector {
	return []prometheus.Collector{metrics.Collect(func(ch chan<- prometheus.Metric) {
		for _, s := range m.Status() {
			for _, st := range supervise.States {
				metrics.Gauge(ch, descState, metrics.Bool(s.State == st), s.Name, s.Transport, st)
			}
			metrics.Gauge(ch, descTools, float64(len(s.Tools)), s.Name)
			metrics.Counter(ch, descRestarts, float64(s.Restarts), s.Name)
		}
	})}
}
