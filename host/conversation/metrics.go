package conversation

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
)

var (
	descFramesIn  = prometheus.NewDesc("agenthost_audio_frames_received_total", "Reply audio frames received from the voice server.", nil, nil)
	descFramesOut = prometheus.NewDesc("agenthost_audio_frames_sent_total", "Microphone audio frames sent to the voice server.", nil, nil)
	descUnderruns = prometheus.NewDesc("agenthost_audio_underruns_total", "Frames of silence played because a reply was late.", nil, nil)
	descBargeIns  = prometheus.NewDesc("agenthost_audio_barge_ins_total", "Replies cut short by a new turn.", nil, nil)
)

// Collectors implements part.Collecting: the audio frames each way, the
// underruns and the barge-ins.
func (c *Conversation) Collectors() []prometheus.Collector {
	return []prometheus.Collector{metrics.Collect(func(ch chan<- prometheus.Metric) {
		cs := c.Stats()
		metrics.Counter(ch, descFramesIn, float64(cs.FramesIn))
		metrics.Counter(ch, descFramesOut, float64(cs.FramesOut))
		metrics.Counter(ch, descUnderruns, float64(cs.Underruns))
		metrics.Counter(ch, descBargeIns, float64(cs.BargeIns))
	})}
}
