package device

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host/metrics"
)

var (
	descVolume       = prometheus.NewDesc("agenthost_volume", "The speaker's volume, 0-100.", nil, nil)
	descSpeakerMuted = prometheus.NewDesc("agenthost_speaker_muted", "1 while the speaker is muted.", nil, nil)
	descMicMuted     = prometheus.NewDesc("agenthost_microphone_muted", "1 while the microphone is muted for privacy.", nil, nil)
	descWithheld     = prometheus.NewDesc("agenthost_microphone_frames_withheld_total", "Microphone frames not sent because the microphone was muted.", nil, nil)
	descPending      = prometheus.NewDesc("agenthost_timers_pending", "Timers and alarms set.", nil, nil)
	descRinging      = prometheus.NewDesc("agenthost_timers_ringing", "Timers and alarms ringing now.", nil, nil)
	descFired        = prometheus.NewDesc("agenthost_timers_fired_total", "Timers and alarms that came due (rang or were missed).", nil, nil)
)

// Collectors implements part.Collecting: volume, mutes, timers.
func (d *Device) Collectors() []prometheus.Collector {
	return []prometheus.Collector{metrics.Collect(func(ch chan<- prometheus.Metric) {
		s := d.Stats()
		metrics.Gauge(ch, descVolume, float64(s.Volume))
		metrics.Gauge(ch, descSpeakerMuted, metrics.Bool(s.SpeakerMuted))
		metrics.Gauge(ch, descMicMuted, metrics.Bool(s.MicrophoneMuted))
		metrics.Gauge(ch, descPending, float64(s.Pending))
		metrics.Gauge(ch, descRinging, float64(s.Ringing))
		metrics.Counter(ch, descWithheld, float64(s.Withheld))
		metrics.Counter(ch, descFired, float64(s.Fired))
	})}
}
