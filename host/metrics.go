package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
	"github.com/agenthost/agenthost/host/part"
)

// Version is the daemon's version for agenthost_build_info (cmd sets it).
var Version = "dev"

// MetricsServer returns the part that serves /metrics on metrics.listen,
// or nil when that is empty (the default). It gathers the collectors of
// the link, the calls and every part added before it.
func (h *Host) MetricsServer() Component {
	addr := h.cfg.Metrics.Listen
	if addr == "" {
		return nil
	}
	var cs []prometheus.Collector
	for _, p := range append([]any{h.link, h.calls}, anys(h.components)...) {
		if c, ok := p.(part.Collecting); ok {
			cs = append(cs, c.Collectors()...)
		}
	}
	return metrics.New(addr, Version, h.log, cs...)
}

func anys(parts []Component) []any {
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}
