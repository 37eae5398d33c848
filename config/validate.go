package config

import (
	"encoding/hex"
	"maps"
	"math"
	"net"
	"net/url"
	gopath "path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/netguard"
)

// Allowed values of the enumerated keys.
var (
	AudioFormats  = []string{"pcm", "opus"}
	Modes         = []string{"manual", "vad", "auto"}
	EmojiModes    = []string{"false", "true", "dimi", "dimi2", "jfb"}
	LogLevels     = []string{"debug", "info", "warn", "error"}
	LogFormats    = []string{"text", "json"}
	AudioBackends = []string{"portaudio", "file", "echo_room", "none"}
)

// MaxKeepalive is the longest idle time the voice server tolerates; a
// keepalive at or above it draws a warning.
const MaxKeepalive = 5 * time.Minute

func path(s string) []string { return strings.Split(s, ".") }

func (l *loader) enum(key, v string, allowed []string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	l.errorf(path(key), "%q is not one of %s%s", v, strings.Join(allowed, ", "), enumHint(v, allowed))
}

func (l *loader) positive(key string, d Duration) {
	if d <= 0 {
		l.errorf(path(key), "%s must be more than 0; write it like 10s or 500ms", d)
	}
}

func (l *loader) backoff(key string, b Backoff) {
	l.positive(key+".base", b.Base)
	l.positive(key+".cap", b.Cap)
	if b.Base > 0 && b.Cap > 0 && b.Cap < b.Base {
		l.errorf(path(key+".cap"), "%s is less than %s.base (%s); make cap at least base", b.Cap, key, b.Base)
	}
}

// liveness checks server.liveness against itself and server.keepalive.
func (l *loader) liveness(s Server) {
	lv := s.Liveness
	l.positive("server.liveness.answer_timeout", lv.AnswerTimeout)
	if lv.AnswerTimeout > 0 && s.Keepalive > 0 && lv.AnswerTimeout >= s.Keepalive {
		l.errorf(path("server.liveness.answer_timeout"), "%s is not shorter than server.keepalive (%s); a few seconds is right, like 5s", lv.AnswerTimeout, s.Keepalive)
	}
	if lv.TCPUserTimeout < 0 || lv.TCPUserTimeout.D() > time.Hour {
		l.errorf(path("server.liveness.tcp_user_timeout"), "%s is not from 0 (the system's default) to 1h; a few seconds more than answer_timeout is right, like 10s", lv.TCPUserTimeout)
	}
	if lv.TCPKeepalive < 0 || (lv.TCPKeepalive > 0 && lv.TCPKeepalive.D() < 3*time.Second) || lv.TCPKeepalive.D() > time.Hour {
		l.errorf(path("server.liveness.tcp_keepalive"), "%s is not 0 (off) or from 3s to 1h (probes go a third of it apart, in whole seconds); like 15s", lv.TCPKeepalive)
	}
}

func (l *loader) hostPort(key, v string) {
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		l.errorf(path(key), "%q is not host:port; write it like 127.0.0.1:8009 or voice.example.com:8009", v)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		l.errorf(path(key), "port %q is not a number from 1 to 65535", port)
	}
}

// OpusRates are the sample rates (Hz) an Opus encoder accepts.
var OpusRates = []int{8000, 12000, 16000, 24000, 48000}

// OpusFrames are the frame lengths an Opus encoder accepts.
var OpusFrames = []time.Duration{2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}

// opus checks audio.rate and audio.frame against what Opus allows when either
// direction uses Opus. Values that are not positive are reported elsewhere.
func (l *loader) opus(p Params, a Audio) {
	why := ""
	switch {
	case p.Format == "opus":
		why = "server.params.format is opus"
	case p.InputAudioFormat == "opus":
		why = "server.params.input_audio_format is opus"
	default:
		return
	}
	if a.Rate > 0 && !slices.Contains(OpusRates, a.Rate) {
		rates := make([]string, len(OpusRates))
		for i, r := range OpusRates {
			rates[i] = strconv.Itoa(r)
		}
		l.errorf(path("audio.rate"), "%d Hz is not a rate Opus supports (%s); use one of %s",
			a.Rate, why, strings.Join(rates, ", "))
	}
	if a.Frame > 0 && !slices.Contains(OpusFrames, a.Frame.D()) {
		frames := make([]string, len(OpusFrames))
		for i, f := range OpusFrames {
			frames[i] = f.String()
		}
		l.errorf(path("audio.frame"), "%s is not a frame length Opus supports (%s); use one of %s",
			a.Frame, why, strings.Join(frames, ", "))
	}
}

// validate checks values and their combinations, after decoding succeeded.
func (l *loader) validate(c *Config) {
	s := c.Server
	l.hostPort("server.address", s.Address)
	if strings.TrimSpace(s.Token) != "" && s.TokenFile != "" {
		l.errorf(path("server.token"), "both server.token and server.token_file are set; keep one (token_file is better: it keeps the secret out of this file)")
	}
	if strings.Contains(s.Token, "##") {
		l.errorf(path("server.token"), "contains \"##\", which cannot be sent in AUTH; check the token")
	}
	l.enum("server.params.format", s.Params.Format, AudioFormats)
	l.enum("server.params.input_audio_format", s.Params.InputAudioFormat, AudioFormats)
	l.enum("server.params.mode", s.Params.Mode, Modes)
	l.enum("server.params.emoji_mode", s.Params.EmojiMode, EmojiModes)
	for _, k := range []struct{ key, v string }{{"voiceid", s.Params.VoiceID}, {"lang", s.Params.Lang}} {
		if strings.Contains(k.v, "##") {
			l.errorf(path("server.params."+k.key), "contains \"##\", which would break the AUTH frame")
		}
	}
	for _, k := range sortedKeys(s.Params.Extra) {
		p := []string{"server", "params", k}
		if k == "" || strings.Contains(k, "##") || strings.Contains(k, ":") {
			l.errorf(p, "a parameter name cannot be empty or contain \"##\" or \":\"")
		}
		if strings.Contains(s.Params.Extra[k], "##") {
			l.errorf(p, "contains \"##\", which would break the AUTH frame")
		}
	}
	l.positive("server.dial_timeout", s.DialTimeout)
	l.positive("server.auth_timeout", s.AuthTimeout)
	l.positive("server.keepalive", s.Keepalive)
	if s.Keepalive.D() >= MaxKeepalive {
		l.warnf(path("server.keepalive"), "%s is not below 5m; the server may close an idle link before the PING; use 4m", s.Keepalive)
	}
	l.liveness(s)
	l.backoff("server.reconnect", s.Reconnect)
	if s.MaxFrame <= 0 {
		l.errorf(path("server.max_frame"), "must be more than 0; write it like 1MiB")
	}

	l.enum("log.level", c.Log.Level, LogLevels)
	l.enum("log.format", c.Log.Format, LogFormats)

	sv := c.Services
	l.positive("services.timeout", sv.Timeout)
	for _, k := range sortedKeys(sv.Timeouts) {
		if sv.Timeouts[k] <= 0 {
			l.errorf([]string{"services", "timeouts", k}, "%s must be more than 0; write it like 30s", sv.Timeouts[k])
		}
	}
	if sv.MaxResult <= 0 {
		l.errorf(path("services.max_result"), "must be more than 0; write it like 64KiB")
	}
	if sv.MaxDescription < 16 {
		l.errorf(path("services.max_description"), "must be at least 16 bytes; write it like 8KiB")
	}
	if sv.MaxRegister < 4<<10 {
		l.errorf(path("services.max_register"), "must be at least 4KiB (the built-in services alone take about 2 KiB); write it like 512KiB")
	} else if sv.MaxDescription > sv.MaxRegister {
		l.errorf(path("services.max_description"), "is more than services.max_register; a service with so long a description could never be registered")
	}
	if sv.MaxInFlight <= 0 {
		l.errorf(path("services.max_in_flight"), "%d must be more than 0", sv.MaxInFlight)
	}
	if sv.MaxInFlightPerProvider <= 0 {
		l.errorf(path("services.max_in_flight_per_provider"), "%d must be more than 0", sv.MaxInFlightPerProvider)
	}
	for _, k := range sortedKeys(sv.Prefixes) {
		if strings.TrimSpace(sv.Prefixes[k]) == "" {
			l.errorf([]string{"services", "prefixes", k}, "the prefix is empty; give one, like %q, or remove the line", k+"_")
		}
	}

	for _, key := range []string{"services.allow", "services.deny"} {
		list := sv.Allow
		if key == "services.deny" {
			list = sv.Deny
		}
		for i, pat := range list {
			if _, err := gopath.Match(pat, ""); err != nil || strings.TrimSpace(pat) == "" {
				l.errorf(path(key), "item %d, %q, is not a glob pattern of service names (like get_* or create_file)", i+1, pat)
			}
		}
	}

	pl := c.Plugins
	for i, d := range pl.Dirs {
		if strings.TrimSpace(d) == "" {
			l.errorf(path("plugins.dirs"), "item %d is empty; give a folder or remove it", i+1)
		}
	}
	l.positive("plugins.start_timeout", pl.StartTimeout)
	l.positive("plugins.debounce", pl.Debounce)
	l.positive("plugins.stop_grace", pl.StopGrace)
	for _, k := range sortedKeys(pl.SHA256) {
		v := strings.TrimSpace(pl.SHA256[k])
		if b, err := hex.DecodeString(v); err != nil || len(b) != 32 {
			l.errorf([]string{"plugins", "sha256", k}, "%q is not a SHA-256 digest; give the 64 hex digits that sha256sum prints", v)
		}
	}
	l.backoff("plugins.restart", Backoff{Base: pl.Restart.Base, Cap: pl.Restart.Cap})
	if pl.Restart.MaxCrashes <= 0 {
		l.errorf(path("plugins.restart.max_crashes"), "%d must be more than 0", pl.Restart.MaxCrashes)
	}
	l.positive("plugins.restart.window", pl.Restart.Window)
	l.positive("plugins.idle_stop", pl.IdleStop)
	if pl.HealthInterval < 0 {
		l.errorf(path("plugins.health_interval"), "%s must not be negative (0 turns health checks off)", pl.HealthInterval)
	}
	for _, class := range pl.Audio.Classes {
		l.enum("plugins.audio.classes", class, PluginAudioClasses)
	}
	if pl.Audio.MaxStreams < 0 {
		l.errorf(path("plugins.audio.max_streams"), "%d must not be negative (0: plugins may not play)", pl.Audio.MaxStreams)
	}
	l.positive("plugins.audio.max_announcement", pl.Audio.MaxAnnouncement)
	for i, entry := range pl.Network.Allow {
		if _, err := netguard.ParseRule(entry); err != nil {
			l.errorf(path("plugins.network.allow"), "item %d, %q: %v (an entry is %s)", i+1, entry, err, netguard.Example)
		}
	}

	a := c.Audio
	l.enum("audio.backend", a.Backend, AudioBackends)
	if a.Backend == "file" && a.InputFile == "" && a.OutputFile == "" {
		l.errorf(path("audio.backend"), "the file backend needs audio.input_file, audio.output_file or both")
	}
	if a.Rate <= 0 {
		l.errorf(path("audio.rate"), "%d must be more than 0 (Hz), like 16000", a.Rate)
	}
	if a.OutputRate != 0 && (a.OutputRate < 8000 || a.OutputRate > 192000) {
		l.errorf(path("audio.output_rate"), "%d is outside 8000…192000 Hz (0: the backend's default, 48000 for a sound card)", a.OutputRate)
	}
	if a.OutputChannels < 0 || a.OutputChannels > 2 {
		l.errorf(path("audio.output_channels"), "%d: use 1 (mono), 2 (stereo) or 0 (the backend's default, 2 for a sound card)", a.OutputChannels)
	}
	l.positive("audio.frame", a.Frame)
	l.opus(s.Params, a)
	l.backoff("audio.retry", a.Retry)
	l.capture(a, c.Conversation)
	l.mix(a.Mix)
	l.device(c)

	cv := c.Conversation
	if cv.JitterLead < 0 {
		l.errorf(path("conversation.jitter_lead"), "%s must not be negative", cv.JitterLead)
	}
	l.positive("conversation.reply_timeout", cv.ReplyTimeout)
	if cv.GPIO.Line < -1 {
		l.errorf(path("conversation.gpio.line"), "%d is not a line number; use 0 or more, or -1 for none", cv.GPIO.Line)
	}
	if cv.GPIO.Chip != "" && cv.GPIO.Line < 0 {
		l.errorf(path("conversation.gpio.line"), "conversation.gpio.chip is set but no line is; give the line number of the button")
	}
	l.wakeWord(c)
	l.household(c.Household)
	for _, k := range sortedKeys(cv.Hooks) {
		p := []string{"conversation", "hooks", k}
		if !contains(HookEvents, k) {
			l.errorf(p, "%q is not an event; use one of %s%s", k, strings.Join(HookEvents, ", "), enumHint(k, HookEvents))
		} else if strings.TrimSpace(cv.Hooks[k]) == "" {
			l.errorf(p, "the command is empty; give a shell command or remove the line")
		}
	}

	if m := c.Sandbox.Mode; !contains(SandboxModes, m) {
		l.errorf(path("sandbox.mode"), "%q is not a sandbox mode; use auto (the default), landlock, namespaces or none%s", m, enumHint(m, SandboxModes))
	}

	for _, n := range slices.Sorted(maps.Keys(c.Plugins.Sandbox)) {
		c.checkGrant(l, "plugins.sandbox."+n, c.Plugins.Sandbox[n])
	}
	for _, n := range slices.Sorted(maps.Keys(c.MCP.Servers)) {
		c.checkGrant(l, "mcp.servers."+n+".sandbox", c.MCP.Servers[n].Sandbox)
	}

	if m := c.Metrics.Listen; m != "" {
		if _, _, err := net.SplitHostPort(m); err != nil {
			l.errorf(path("metrics.listen"), "%q is not HOST:PORT, like 127.0.0.1:9464", m)
		}
	}
	l.hostNames("metrics.hosts", c.Metrics.Hosts)
	l.hostNames("mcp.serve.hosts", c.MCP.Serve.Hosts)

	names := slices.Sorted(maps.Keys(c.MCP.Servers))
	known := structFields(reflect.TypeOf(MCPServer{})).names
	for _, n := range names {
		sv := c.MCP.Servers[n]
		p := []string{"mcp", "servers", n}
		sub := func(k string) []string { return append(append([]string(nil), p...), k) }
		switch {
		case strings.TrimSpace(n) == "":
			l.errorf(p, "a server needs a name")
		case sv.Command == "" && sv.URL == "":
			l.errorf(p, "set command (a program to run, speaking MCP on stdio) or url (an MCP HTTP endpoint)")
		case sv.Command != "" && sv.URL != "":
			l.errorf(p, "set command or url, not both")
		case sv.URL != "":
			u, err := url.Parse(sv.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				l.errorf(sub("url"), "not an http:// or https:// URL")
			}
			if len(sv.Args) > 0 || len(sv.Env) > 0 {
				l.errorf(p, "args and env apply to command servers only; this one has a url")
			}
		case sv.Command != "":
			if len(sv.Headers) > 0 {
				l.errorf(sub("headers"), "headers apply to url servers only; this one has a command")
			}
		}
		switch strings.ToLower(sv.Type) {
		case "", "stdio", "http", "streamable-http", "streamablehttp", "streamable_http", "sse":
		default:
			l.errorf(sub("type"), "%q is not stdio, http or sse", sv.Type)
		}
		if sv.Timeout < 0 {
			l.errorf(sub("timeout"), "%s must not be negative (0 means services.timeout)", Duration(sv.Timeout))
		}
		for _, k := range sortedKeys(sv.Extra) {
			if s := closest(k, known, typoLimit(len(k))); s != "" {
				l.warnf(sub(k), "not a field of an MCP server and ignored; did you mean %s?", s)
			} else {
				l.warnf(sub(k), "not a field agenthost uses (another client's, perhaps) and ignored")
			}
		}
	}
	l.positive("mcp.start_timeout", c.MCP.StartTimeout)
	if m := c.MCP.Serve.Listen; m != "" {
		if _, _, err := net.SplitHostPort(m); err != nil {
			l.errorf(path("mcp.serve.listen"), "%q is not HOST:PORT, like 127.0.0.1:8765", m)
		}
	}
	if c.MCP.Serve.Token != "" && c.MCP.Serve.TokenFile != "" {
		l.errorf(path("mcp.serve.token_file"), "set mcp.serve.token or mcp.serve.token_file, not both")
	}
	ms := c.MCP.Serve
	l.positive("mcp.serve.session_timeout", ms.SessionTimeout)
	for _, b := range []struct {
		key string
		n   int
	}{
		{"max_sessions", ms.MaxSessions}, {"max_connections", ms.MaxConnections}, {"max_connections_per_client", ms.MaxConnectionsPerClient},
		{"max_calls", ms.MaxCalls}, {"max_calls_per_session", ms.MaxCallsPerSession},
	} {
		if b.n <= 0 {
			l.errorf(path("mcp.serve."+b.key), "%d must be more than 0", b.n)
		}
	}
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// mix checks audio.mix (package audio/mixer).
func (l *loader) mix(m Mix) {
	if math.IsNaN(m.DuckDB) || m.DuckDB < -60 || m.DuckDB > -1 {
		l.errorf(path("audio.mix.duck_db"), "%g dB is outside -60…-1 dB (how far media is turned down)", m.DuckDB)
	}
	if m.Ramp < Duration(time.Millisecond) || m.Ramp > Duration(time.Second) {
		l.errorf(path("audio.mix.ramp"), "%s is outside 1ms…1s", m.Ramp)
	}
	if m.KeepFed < Duration(10*time.Millisecond) || m.KeepFed > Duration(200*time.Millisecond) {
		l.errorf(path("audio.mix.keep_fed"), "%s is outside 10ms…200ms", m.KeepFed)
	}
	if m.MediaWhileActive != "duck" && m.MediaWhileActive != "pause" {
		l.errorf(path("audio.mix.media_while_active"), "%q: use duck or pause", m.MediaWhileActive)
	}
}

// capture checks audio.capture and audio.echo_room (the bounds are those
// of packages audio/capture and audio/echoroom).
func (l *loader) capture(a Audio, cv Conversation) {
	cp := a.Capture
	if cp.EchoTail < Duration(20*time.Millisecond) || cp.EchoTail > Duration(500*time.Millisecond) {
		l.errorf(path("audio.capture.echo_tail"), "%s is outside 20ms…500ms", cp.EchoTail)
	}
	if cp.EchoDelaySearch < 0 || cp.EchoDelaySearch > Duration(1500*time.Millisecond) {
		l.errorf(path("audio.capture.echo_delay_search"), "%s is outside 0…1500ms (0 turns the search off)", cp.EchoDelaySearch)
	}
	if cp.NoiseLevel < -60 || cp.NoiseLevel > -1 {
		l.errorf(path("audio.capture.noise_level"), "%d dB is outside -60…-1 dB (the most noise suppression takes off)", cp.NoiseLevel)
	}
	if math.IsNaN(cp.Gain) || cp.Gain < -30 || cp.Gain > 30 {
		l.errorf(path("audio.capture.gain"), "%g dB is outside -30…30 dB", cp.Gain)
	}
	if (cp.EchoCancel || cp.NoiseSuppression) && a.Rate%100 != 0 {
		l.errorf(path("audio.rate"), "%d Hz is not a whole number of samples per 10 ms, which the capture stages need", a.Rate)
	}
	if cv.AEC && !cp.EchoCancel && a.Backend != "none" {
		l.warnf(path("conversation.aec"), "the microphone stays open while replies play, but audio.capture.echo_cancel is off: unless the sound device cancels echo itself, the server will hear the speaker and interrupt itself")
	}
	r := a.EchoRoom
	if r.Delay < 0 || r.Delay > Duration(500*time.Millisecond) {
		l.errorf(path("audio.echo_room.delay"), "%s is outside 0…500ms", r.Delay)
	}
	if r.Reverb < 0 || r.Reverb > Duration(time.Second) {
		l.errorf(path("audio.echo_room.reverb"), "%s is outside 0…1s", r.Reverb)
	}
	if math.IsNaN(r.Gain) || r.Gain < -60 || r.Gain > 6 {
		l.errorf(path("audio.echo_room.gain"), "%g dB is outside -60…6 dB", r.Gain)
	}
	if math.IsNaN(r.Clip) || r.Clip < 0 || r.Clip > 1 {
		l.errorf(path("audio.echo_room.clip"), "%g is outside 0…1 (a fraction of full scale; 0 is off)", r.Clip)
	}
	if math.IsNaN(r.Noise) || r.Noise > 0 {
		l.errorf(path("audio.echo_room.noise"), "%g dBFS must be 0 (none) or below, like -65", r.Noise)
	}
	for _, k := range []struct {
		key string
		d   Duration
	}{{"speech_at", r.SpeechAt}, {"speech_every", r.SpeechEvery}, {"interrupt_after", r.InterruptAfter}} {
		if k.d < 0 {
			l.errorf(path("audio.echo_room."+k.key), "%s must not be negative", k.d)
		}
	}
}

// hostNames checks names a listener answers to: host names, no port, no
// scheme.
func (l *loader) hostNames(key string, names []string) {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, ":/ ") || strings.Trim(n, "[]") != n {
			l.errorf(path(key), "%q is not a host name; give a name like speaker.lan (no port, no scheme)", n)
		}
	}
}
