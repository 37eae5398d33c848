package host

import "github.com/prometheus/client_golang/prometheus"

// deviceCollector exports the device's state: volume, mutes, timers.
type deviceCollector struct{ h *Host }

var (
	descVolume       = prometheus.NewDesc("agenthost_volume", "The speaker's volume, 0-100.", nil, nil)
	descSpeakerMuted = prometheus.NewDesc("agenthost_speaker_muted", "1 while the speaker is muted.", nil, nil)
	descMicMuted     = prometheus.NewDesc("agenthost_microphone_muted", "1 while the microphone is muted for privacy.", nil, nil)
	descWithheld     = prometheus.NewDesc("agenthost_microphone_frames_withheld_total", "Microphone frames not sent because the microphone was muted.", nil, nil)
	descPending      = prometheus.NewDesc("agenthost_timers_pending", "Timers and alarms set.", nil, nil)
	descRinging      = prometheus.NewDesc("agenthost_timers_ringing", "Timers and alarms ringing now.", nil, nil)
	descFired        = prometheus.NewDesc("agenthost_timers_fired_total", "Timers and alarms that came due (rang or were missed).", nil, nil)
)

func (c deviceCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c deviceCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.h.device.Stats()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(descVolume, float64(s.Volume))
	gauge(descSpeakerMuted, b2f(s.SpeakerMuted))
	gauge(descMicMuted, b2f(s.MicrophoneMuted))
	gauge(descPending, float64(s.Pending))
	gauge(descRinging, float64(s.Ringing))
	ch <- prometheus.MustNewConstMetric(descWithheld, prometheus.CounterValue, float64(s.Withheld))
	ch <- prometheus.MustNewConstMetric(descFired, prometheus.CounterValue, float64(s.Fired))
}
