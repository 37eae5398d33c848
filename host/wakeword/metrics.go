package wakeword

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
)

var (
	descOn         = prometheus.NewDesc("agenthost_wake_word_on", "1 while the wake-word detector runs and hears the microphone.", nil, nil)
	descDetections = prometheus.NewDesc("agenthost_wake_detections_total", "Wake phrases heard, by model.", []string{"model"}, nil)
	descRestarts   = prometheus.NewDesc("agenthost_wake_word_restarts_total", "Restarts of the wake-word detector after it crashed or hung.", nil, nil)
	descDropped    = prometheus.NewDesc("agenthost_wake_word_dropped_seconds_total", "Microphone audio the detector did not hear (not running, or behind).", nil, nil)
	descGated      = prometheus.NewDesc("agenthost_wake_word_gated_seconds_total", "Microphone audio of a quiet room the gate kept from the detector.", nil, nil)
)

// Collectors implements part.Collecting: whether the detector hears, what
// it heard, and what it did not hear.
func (d *Detector) Collectors() []prometheus.Collector {
	return []prometheus.Collector{metrics.Collect(func(ch chan<- prometheus.Metric) {
		st := d.Status()
		metrics.Gauge(ch, descOn, metrics.Bool(st.On))
		for model, n := range st.ByModel {
			metrics.Counter(ch, descDetections, float64(n), model)
		}
		metrics.Counter(ch, descRestarts, float64(st.Restarts))
		metrics.Counter(ch, descDropped, st.DroppedSeconds)
		metrics.Counter(ch, descGated, st.GatedSeconds)
	})}
}
