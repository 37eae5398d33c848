package link

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
)

var (
	descUp           = prometheus.NewDesc("agenthost_link_up", "1 while the link to the voice server is up.", nil, nil)
	descConnections  = prometheus.NewDesc("agenthost_link_connections_total", "Connections to the voice server that sent AUTH (reconnects are all but the first).", nil, nil)
	descAuthFailures = prometheus.NewDesc("agenthost_link_auth_failures_total", "Connections the voice server refused after AUTH.", nil, nil)
	descOutages      = prometheus.NewDesc("agenthost_link_outages_total", "Connections that were up and went down unasked, by reason (no_answer: a PING went unanswered within server.liveness.answer_timeout).", []string{"reason"}, nil)
	descLastOutage   = prometheus.NewDesc("agenthost_link_last_outage_timestamp_seconds", "When the latest outage began (Unix time); 0 if none.", nil, nil)
)

// Collectors implements part.Collecting: the link's state and counters.
func (l *Link) Collectors() []prometheus.Collector {
	return []prometheus.Collector{metrics.Collect(func(ch chan<- prometheus.Metric) {
		up, _ := l.Up()
		metrics.Gauge(ch, descUp, metrics.Bool(up))
		ls := l.Stats()
		metrics.Counter(ch, descConnections, float64(ls.Connections))
		metrics.Counter(ch, descAuthFailures, float64(ls.AuthFailures))
		st := l.State()
		for _, r := range Reasons {
			metrics.Counter(ch, descOutages, float64(st.ByReason[r]), r)
		}
		last := 0.0
		if st.LastOutageAt != nil {
			last = float64(st.LastOutageAt.UnixMilli()) / 1e3
		}
		metrics.Gauge(ch, descLastOutage, last)
	})}
}
