package metrics

import (
	"runtime"

	"github.com/agenthost/agenthost/audio/mixer"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/pluginsound"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
)

// Sources are the parts the metrics read, each through its own status or
// counters; nil ones (no conversation, the wake word off) export nothing.
type Sources struct {
	Link         *link.Link
	Calls        *calls.Calls
	Plugins      *pluginmgr.Manager
	MCP          *mcpservers.Servers
	Conversation *conversation.Conversation
	Wake         *hostwake.Detector
	Device       *device.Device
	Mixer        *mixer.Mixer // the speaker's output mixer; nil: none
	// Media is the plugins' sound on the mixer; nil: none.
	Media *pluginsound.Out
}

// collector exports the parts' counters, read at scrape time, and the
// calls, observed as they end.
type collector struct {
	s        Sources
	version  string
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
)

var descBuild = prometheus.NewDesc("agenthost_build_info", "The daemon's version; always 1.", []string{"version", "goversion"}, nil)

// partCollectors are the collectors of s; they observe each call of s.Calls
// from now on.
func partCollectors(s Sources, version string) []prometheus.Collector {
	m := &collector{s: s, version: version,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_calls_total",
			Help: "Calls by caller (voice_server, owner: the CLI, mcp: an MCP client), service and outcome (success or error)."}, []string{"caller", "service", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_call_duration_seconds",
			Help:    "The host's time for a call from the voice server: dispatch, the provider, queueing the result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"service"}),
	}
	s.Calls.OnCall(m.observe)
	cs := []prometheus.Collector{m, m.calls, m.duration, deviceCollector{s.Device}}
	if s.Mixer != nil {
		cs = append(cs, mixerCollector{s.Mixer})
	}
	if s.Media != nil {
		cs = append(cs, mediaCollector{s.Media})
	}
	return cs
}

func (m *collector) observe(r calls.Record) {
	outcome := "success"
	if !r.Success {
		outcome = "error"
	}
	service := r.Method
	if _, known := m.s.Calls.Registry().Lookup(service); !known {
		service = "(unknown)" // the server's mistakes must not grow the label set
	}
	m.calls.WithLabelValues(callerLabel(r.Caller), service, outcome).Inc()
	if r.Caller == services.CallerVoiceServer {
		m.duration.WithLabelValues(service).Observe(r.Took.Seconds())
	}
}

// callerLabel names a caller in agenthost_calls_total.
func callerLabel(c services.Caller) string {
	switch c {
	case services.CallerVoiceServer:
		return "voice_server"
	case services.CallerOwner:
		return "owner"
	case services.CallerMCP:
		return "mcp"
	case services.CallerPeer:
		return "peer"
	}
	return "unknown"
}

// Describe implements prometheus.Collector.
func (m *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(m, ch) }

// Collect implements prometheus.Collector: the parts' counters now.
func (m *collector) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	up, _ := s.Link.Up()
	gauge(descUp, b2f(up))
	ls := s.Link.Stats()
	counter(descConnections, float64(ls.Connections))
	counter(descAuthFailures, float64(ls.AuthFailures))
	st := s.Link.State()
	for _, r := range link.Reasons {
		counter(descOutages, float64(st.ByReason[r]), r)
	}
	last := 0.0
	if st.LastOutageAt != nil {
		last = float64(st.LastOutageAt.UnixMilli()) / 1e3
	}
	gauge(descLastOutage, last)
	counter(descRegisters, float64(s.Calls.Registers()))
	gauge(descServices, float64(len(s.Calls.Registry().Names())))
	gauge(descInFlight, float64(s.Calls.Dispatcher().InFlight()))
	if s.Plugins != nil {
		for _, p := range s.Plugins.Status() {
			for _, st := range supervise.States {
				gauge(descPlugin, b2f(p.State == st), p.Name, st)
			}
			counter(descRestarts, float64(p.Restarts), p.Name)
			counter(descParks, float64(p.Parks), p.Name)
		}
	}
	if s.MCP != nil {
		for _, m := range s.MCP.Status() {
			for _, st := range supervise.States {
				gauge(descMCPState, b2f(m.State == st), m.Name, m.Transport, st)
			}
			gauge(descMCPTools, float64(len(m.Tools)), m.Name)
			counter(descMCPRestarts, float64(m.Restarts), m.Name)
		}
	}
	if s.Conversation != nil {
		cs := s.Conversation.Stats()
		counter(descFramesIn, float64(cs.FramesIn))
		counter(descFramesOut, float64(cs.FramesOut))
		counter(descUnderruns, float64(cs.Underruns))
		counter(descBargeIns, float64(cs.BargeIns))
	}
	m.collectWake(gauge, counter)
	gauge(descBuild, 1, m.version, runtime.Version())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	descWakeOn         = prometheus.NewDesc("agenthost_wake_word_on", "1 while the wake-word detector runs and hears the microphone.", nil, nil)
	descWakeDetections = prometheus.NewDesc("agenthost_wake_detections_total", "Wake phrases heard, by model.", []string{"model"}, nil)
	descWakeRestarts   = prometheus.NewDesc("agenthost_wake_word_restarts_total", "Restarts of the wake-word detector after it crashed or hung.", nil, nil)
	descWakeDropped    = prometheus.NewDesc("agenthost_wake_word_dropped_seconds_total", "Microphone audio the detector did not hear (not running, or behind).", nil, nil)
	descWakeGated      = prometheus.NewDesc("agenthost_wake_word_gated_seconds_total", "Microphone audio of a quiet room the gate kept from the detector.", nil, nil)
)

// collectWake adds the wake word's metrics (none when it is off).
func (m *collector) collectWake(gauge, counter func(*prometheus.Desc, float64, ...string)) {
	if m.s.Wake == nil {
		return
	}
	st := m.s.Wake.Status()
	gauge(descWakeOn, b2f(st.On))
	for model, n := range st.ByModel {
		counter(descWakeDetections, float64(n), model)
	}
	counter(descWakeRestarts, float64(st.Restarts))
	counter(descWakeDropped, st.DroppedSeconds)
	counter(descWakeGated, st.GatedSeconds)
}

// deviceCollector exports the device's state: volume, mutes, timers.
type deviceCollector struct{ d *device.Device }

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
	s := c.d.Stats()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(descVolume, float64(s.Volume))
	gauge(descSpeakerMuted, b2f(s.SpeakerMuted))
	gauge(descMicMuted, b2f(s.MicrophoneMuted))
	gauge(descPending, float64(s.Pending))
	gauge(descRinging, float64(s.Ringing))
	ch <- prometheus.MustNewConstMetric(descWithheld, prometheus.CounterValue, float64(s.Withheld))
	ch <- prometheus.MustNewConstMetric(descFired, prometheus.CounterValue, float64(s.Fired))
}

// mixerCollector exports the output mixer's state: streams, ducking.
type mixerCollector struct{ m *mixer.Mixer }

var (
	descMixStreams = prometheus.NewDesc("agenthost_mixer_streams", "Streams playing on the speaker's mixer now, by class (ring, voice, earcon, announcement, media).", []string{"class"}, nil)
	descMixOpened  = prometheus.NewDesc("agenthost_mixer_streams_opened_total", "Streams opened on the speaker's mixer.", nil, nil)
	descMixDucks   = prometheus.NewDesc("agenthost_mixer_ducks_total", "Times media was turned down (ducked or paused) for the assistant, an announcement or a ring.", nil, nil)
	descMixActive  = prometheus.NewDesc("agenthost_mixer_active", "1 while the assistant listens or speaks (media is ducked).", nil, nil)
	descMixPlayed  = prometheus.NewDesc("agenthost_mixer_played_seconds_total", "Seconds of sound the speaker's mixer played, by class.", []string{"class"}, nil)
)

func (c mixerCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c mixerCollector) Collect(ch chan<- prometheus.Metric) {
	n := map[string]int{}
	for _, cl := range []mixer.Class{mixer.Ring, mixer.Voice, mixer.Earcon, mixer.Announcement, mixer.Media} {
		n[cl.String()] = 0
	}
	for _, s := range c.m.Status() {
		n[s.Class]++
	}
	for cl, k := range n {
		ch <- prometheus.MustNewConstMetric(descMixStreams, prometheus.GaugeValue, float64(k), cl)
	}
	st := c.m.Stats()
	ch <- prometheus.MustNewConstMetric(descMixOpened, prometheus.CounterValue, float64(st.Opened))
	ch <- prometheus.MustNewConstMetric(descMixDucks, prometheus.CounterValue, float64(st.Ducks))
	ch <- prometheus.MustNewConstMetric(descMixActive, prometheus.GaugeValue, b2f(st.Active))
	for cl, d := range st.Played {
		ch <- prometheus.MustNewConstMetric(descMixPlayed, prometheus.CounterValue, d.Seconds(), cl)
	}
}

// mediaCollector exports what only the plugins' door knows (the mixer's
// streams, ducks and seconds played are agenthost_mixer_*): the streams
// plugins started, and how often the host turned one down, ducked apart
// from paused.
type mediaCollector struct{ o *pluginsound.Out }

var (
	descMediaStarted = prometheus.NewDesc("agenthost_media_streams_started_total", "Streams plugins started on the speaker (the media plugin's play, announce), by class.", []string{"class"}, nil)
	descMediaHeld    = prometheus.NewDesc("agenthost_media_held_total", "Times the host turned a plugin's stream down (for the assistant, an announcement or a ring), by how: ducked or paused (audio.mix.media_while_active).", []string{"how"}, nil)
)

func (c mediaCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c mediaCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.o.Stats()
	for _, cl := range config.PluginAudioClasses {
		ch <- prometheus.MustNewConstMetric(descMediaStarted, prometheus.CounterValue, float64(st.Started[cl]), cl)
	}
	for _, how := range []string{"ducked", "paused"} {
		ch <- prometheus.MustNewConstMetric(descMediaHeld, prometheus.CounterValue, float64(st.Held[how]), how)
	}
}
