package config

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// DefaultPath is where the daemon looks for its config file when none is given.
// A missing file at this path is not an error (defaults and environment apply).
const DefaultPath = "/etc/agenthost/agenthost.yaml"

// EnvPrefix starts every environment variable that sets a config key, e.g.
// AGENTHOST_SERVER_ADDRESS for server.address.
const EnvPrefix = "AGENTHOST_"

// EnvConfigPath is an AGENTHOST_ variable that is not a config key: the CLI
// may use it to name the config file. Load ignores it.
const EnvConfigPath = "AGENTHOST_CONFIG"

// EnvPluginPrefix starts AGENTHOST_ variables read by plugins (e.g.
// AGENTHOST_PLUGIN_LOG_LEVEL, AGENTHOST_PLUGIN_DATA_DIR); they are not config
// keys and Load ignores them. (Config keys under plugins. start with
// AGENTHOST_PLUGINS_, with an S.)
const EnvPluginPrefix = "AGENTHOST_PLUGIN_"

// EnvAudioVerbose is read by the audio package (device-library diagnostics);
// it is not a config key and Load ignores it.
const EnvAudioVerbose = "AGENTHOST_AUDIO_VERBOSE"

// EnvProcessTree is set by the host in the environment of every plugin and
// MCP server it starts (internal/proctree tags their processes with it); an
// agenthost started under one finds it there. It is not a config key and
// Load ignores it.
const EnvProcessTree = "AGENTHOST_TREE"

// Config is the whole effective configuration. Field tags give the YAML keys.
type Config struct {
	Server       Server       `yaml:"server"`
	Log          Log          `yaml:"log"`
	Services     Services     `yaml:"services"`
	Plugins      Plugins      `yaml:"plugins"`
	Audio        Audio        `yaml:"audio"`
	Conversation Conversation `yaml:"conversation"`
	MCP          MCP          `yaml:"mcp"`
	Metrics      Metrics      `yaml:"metrics"`
	Device       Device       `yaml:"device"`
	Sandbox      Sandbox      `yaml:"sandbox"`
	Household    Household    `yaml:"household"`

	// Path is the file that was loaded ("" if none).
	Path string `yaml:"-"`
	// Warnings are problems that do not stop the daemon (e.g. a keepalive
	// that the server may not accept). Each is one readable line.
	Warnings []string `yaml:"-"`
}

// Server is the link to the voice server.
type Server struct {
	Address     string   `yaml:"address"`
	TLS         bool     `yaml:"tls"`
	Token       string   `yaml:"token" cfg:"secret"`
	TokenFile   string   `yaml:"token_file"`
	Params      Params   `yaml:"params"`
	DialTimeout Duration `yaml:"dial_timeout"`
	// AuthTimeout: after AUTH, an error STATUS or a close within this long
	// counts as an authentication failure.
	AuthTimeout Duration `yaml:"auth_timeout"`
	// Keepalive: send ##PING when nothing was sent for this long.
	Keepalive Duration `yaml:"keepalive"`
	Liveness  Liveness `yaml:"liveness"`
	Reconnect Backoff  `yaml:"reconnect"`
	MaxFrame  Size     `yaml:"max_frame"`
}

// Liveness bounds how long a link whose server stopped answering goes
// unnoticed (a path that died without a FIN: a Wi-Fi roam, a NAT reset).
type Liveness struct {
	// AnswerTimeout: the ##PING sent when a turn starts, while its reply is
	// awaited and after keepalive must be answered (##INFO:PONG) within
	// this long, or the connection is dropped and made again.
	AnswerTimeout Duration `yaml:"answer_timeout"`
	// TCPUserTimeout: data the server's TCP leaves unacknowledged this long
	// fails the connection (TCP_USER_TIMEOUT); 0 = the system's default.
	TCPUserTimeout Duration `yaml:"tcp_user_timeout"`
	// TCPKeepalive: an idle connection is probed by TCP after this long,
	// then every third of it, three times; 0 = no TCP keepalive.
	TCPKeepalive Duration `yaml:"tcp_keepalive"`
}

// Params are the AUTH parameters (voice protocol §6.1). Extra holds any other
// key given under server.params; it is passed through unchanged.
type Params struct {
	VoiceID          string            `yaml:"voiceid"`
	Lang             string            `yaml:"lang"`
	Format           string            `yaml:"format"`
	InputAudioFormat string            `yaml:"input_audio_format"`
	Mode             string            `yaml:"mode"`
	EmojiMode        string            `yaml:"emoji_mode"`
	Extra            map[string]string `yaml:",inline"`
}

// Pairs returns the AUTH parameters to send as key/value pairs, leaving out
// empty values: the known ones in the order of voice protocol §6.1, then the
// extra ones sorted by key.
func (p Params) Pairs() [][2]string {
	out := make([][2]string, 0, len(p.Extra)+6)
	for _, kv := range [][2]string{
		{"voiceid", p.VoiceID}, {"lang", p.Lang}, {"format", p.Format},
		{"input_audio_format", p.InputAudioFormat}, {"mode", p.Mode}, {"emoji_mode", p.EmojiMode},
	} {
		if kv[1] != "" {
			out = append(out, kv)
		}
	}
	for _, k := range sortedKeys(p.Extra) {
		if v := p.Extra[k]; v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// Backoff is an exponential back-off: the first wait is Base, doubling up to Cap.
type Backoff struct {
	Base Duration `yaml:"base"`
	Cap  Duration `yaml:"cap"`
}

// Log configures log/slog output.
type Log struct {
	Level  string `yaml:"level"`  // debug|info|warn|error
	Format string `yaml:"format"` // text|json
}

// Services configures dispatch of tool calls.
type Services struct {
	Timeout     Duration            `yaml:"timeout"`
	Timeouts    map[string]Duration `yaml:"timeouts"`
	MaxResult   Size                `yaml:"max_result"`
	MaxInFlight int                 `yaml:"max_in_flight"`
	// MaxInFlightPerProvider bounds the calls running at once on one
	// provider, for each caller's budget: a provider that never answers
	// cannot take every slot from the others.
	MaxInFlightPerProvider int `yaml:"max_in_flight_per_provider"`
	// MaxDescription bounds one service's description (a longer one is
	// cut); MaxRegister bounds the register the voice server gets (and
	// tools/list for MCP clients): services that do not fit are left out,
	// by provider rank then name, and named in the log and status.
	MaxDescription Size `yaml:"max_description"`
	MaxRegister    Size `yaml:"max_register"`
	// Prefixes maps a provider id to a prefix for its service names.
	Prefixes map[string]string `yaml:"prefixes"`
	Builtins bool              `yaml:"builtins"`
	// Allow and Deny are glob patterns of service names ("get_*"): what the
	// voice server and MCP clients may see and call. An empty Allow allows
	// all; Deny wins.
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
}

// TimeoutFor returns the deadline for a call of the named service:
// services.timeouts[name] if set, else services.timeout.
func (s Services) TimeoutFor(name string) Duration {
	if d, ok := s.Timeouts[name]; ok {
		return d
	}
	return s.Timeout
}

// Plugins configures the plugin manager.
type Plugins struct {
	Dirs         []string `yaml:"dirs"`
	AutoMTLS     bool     `yaml:"automtls"`
	StartTimeout Duration `yaml:"start_timeout"`
	Debounce     Duration `yaml:"debounce"`
	// StopGrace is how long in-flight calls on an old instance may finish.
	StopGrace  Duration `yaml:"stop_grace"`
	RuntimeDir string   `yaml:"runtime_dir"`
	// SHA256 pins a plugin (by name) to a hex digest of its binary.
	SHA256 map[string]string `yaml:"sha256"`
	// Config is a free-form subtree per plugin name, handed to that plugin.
	Config  map[string]any `yaml:"config"`
	Restart Restart        `yaml:"restart"`
	// Lazy plugins are registered from a description cached by the binary's
	// sha256 and run only while used: the first call starts one, IdleStop
	// without calls stops it. LazyOverrides sets it per plugin name.
	Lazy          bool            `yaml:"lazy"`
	LazyOverrides map[string]bool `yaml:"lazy_overrides"`
	IdleStop      Duration        `yaml:"idle_stop"`
	// HealthInterval: a running plugin's Health is asked this often; one
	// that fails is restarted like a crashed one. 0 turns it off.
	HealthInterval Duration `yaml:"health_interval"`
	// StateDir holds what plugins keep (a folder per plugin) and the cache
	// of plugin descriptions. "" = see StateDirectory.
	StateDir string `yaml:"state_dir"`
	// Audio is what plugins may play through the speaker.
	Audio PluginAudio `yaml:"audio"`
	// Sandbox grants a plugin, by name, folders to read or write beyond its
	// own (sandbox, and docs/security.md).
	Sandbox map[string]Grant `yaml:"sandbox"`
	// Network is where plugins may reach for a call that is not the owner's.
	Network PluginNetwork `yaml:"network"`
}

// PluginNetwork is where a plugin may connect for a call of the voice
// server's model, an MCP client or an unknown caller: public addresses,
// and those Allow names (host names, addresses, CIDR ranges, each with an
// optional port). The owner's calls may reach any address.
type PluginNetwork struct {
	Allow []string `yaml:"allow"`
}

// PluginAudio is the policy for sound from plugins: plugins named in Deny
// may not play; the others may play streams of the Classes listed, at most
// MaxStreams at a time each; an announcement ends after MaxAnnouncement
// of sound.
type PluginAudio struct {
	Deny            []string `yaml:"deny"`
	Classes         []string `yaml:"classes"`
	MaxStreams      int      `yaml:"max_streams"`
	MaxAnnouncement Duration `yaml:"max_announcement"`
}

// PluginAudioClasses are the stream classes a plugin may be allowed.
var PluginAudioClasses = []string{"ring", "voice", "earcon", "announcement", "media"}

// IsLazy says whether the named plugin runs lazily.
func (p Plugins) IsLazy(name string) bool {
	if v, ok := p.LazyOverrides[name]; ok {
		return v
	}
	return p.Lazy
}

// Restart limits restarting crashed plugins: back-off from Base to Cap, and
// give up after MaxCrashes crashes within Window.
type Restart struct {
	Base       Duration `yaml:"base"`
	Cap        Duration `yaml:"cap"`
	MaxCrashes int      `yaml:"max_crashes"`
	Window     Duration `yaml:"window"`
}

// Audio configures capture and playback.
type Audio struct {
	Backend    string   `yaml:"backend"` // portaudio|file|none
	Input      string   `yaml:"input"`   // device name substring (case-insensitive) or index
	Output     string   `yaml:"output"`
	InputFile  string   `yaml:"input_file"`  // file backend: WAV or raw s16le
	OutputFile string   `yaml:"output_file"` // file backend: WAV written here
	Rate       int      `yaml:"rate"`        // wire sample rate, Hz
	Frame      Duration `yaml:"frame"`
	// Pace makes capture and playback take real time; for devices that are
	// not a clock (headless ALSA, files).
	Pace  bool    `yaml:"pace"`
	Retry Backoff `yaml:"retry"`
	// Mixer names an ALSA mixer control that takes the volume ("PCM",
	// "hw:1/Speaker"); "" = a gain in the playback path.
	Mixer string `yaml:"mixer"`
	// Mix is the output mixer's policy (package audio/mixer).
	Mix Mix `yaml:"mix"`
	// OutputRate (Hz) and OutputChannels are the speaker's format, which
	// the output mixer mixes at; 0 is the backend's default (OutputFormat).
	OutputRate     int `yaml:"output_rate"`
	OutputChannels int `yaml:"output_channels"`
	// Capture is the microphone's processing (package audio/capture).
	Capture Capture `yaml:"capture"`
	// EchoRoom is the simulated room of the echo_room backend.
	EchoRoom EchoRoom `yaml:"echo_room"`
}

// Output defaults: a sound card is asked for 48 kHz stereo (music); the
// file and echo_room backends write mono at audio.rate, which is what tests
// and tools that read them expect.
const (
	DefaultOutputRate     = 48000
	DefaultOutputChannels = 2
)

// OutputFormat is the speaker's rate and channel count: audio.output_rate
// and audio.output_channels, or the backend's default for those left 0
// (portaudio: 48000 Hz stereo; file, echo_room: audio.rate, mono).
func (a Audio) OutputFormat() (rate, channels int) {
	rate, channels = a.OutputRate, a.OutputChannels
	if a.Backend == "portaudio" {
		if rate == 0 {
			rate = DefaultOutputRate
		}
		if channels == 0 {
			channels = DefaultOutputChannels
		}
	}
	if rate == 0 {
		rate = a.Rate
	}
	return rate, max(channels, 1)
}

// Mix is how the speaker's output mixer lets media yield: while the
// assistant listens or speaks, or an announcement or a ring plays, media is
// turned down by DuckDB over Ramp, or paused (MediaWhileActive).
type Mix struct {
	DuckDB           float64  `yaml:"duck_db"`
	Ramp             Duration `yaml:"ramp"`
	MediaWhileActive string   `yaml:"media_while_active"` // duck|pause
	// KeepFed is the silence written at a time while nothing plays and
	// the echo canceller needs the speaker fed: longer blocks wake the
	// daemon less often, and delay a sound's start by up to one block.
	KeepFed Duration `yaml:"keep_fed"`
}

// Capture configures the stages the microphone passes through: echo
// cancellation (against what the speaker plays), noise suppression, gain.
// Each is off unless set.
type Capture struct {
	EchoCancel bool `yaml:"echo_cancel"`
	// EchoTail is the echo path the canceller's filter models beyond the
	// bulk delay; EchoDelaySearch how far beyond the devices' reported
	// latency it looks for that delay (0: no search).
	EchoTail         Duration `yaml:"echo_tail"`
	EchoDelaySearch  Duration `yaml:"echo_delay_search"`
	NoiseSuppression bool     `yaml:"noise_suppression"`
	// NoiseLevel is the most noise suppression takes off, in dB (negative).
	NoiseLevel int `yaml:"noise_level"`
	// Gain is a fixed gain in dB after the other stages (0: none).
	Gain float64 `yaml:"gain"`
}

// EchoRoom is a simulated room (package audio/echoroom): what the host
// plays comes back into its microphone, with near-end speech from files.
type EchoRoom struct {
	Delay  Duration `yaml:"delay"`
	Gain   float64  `yaml:"gain"` // dB
	Reverb Duration `yaml:"reverb"`
	Clip   float64  `yaml:"clip"`  // soft-clipping level, a fraction of full scale; 0 is off
	Noise  float64  `yaml:"noise"` // dBFS; 0 is none
	// Speech (WAV or raw 16-bit) is said at SpeechAt, then every SpeechEvery.
	Speech      string   `yaml:"speech"`
	SpeechAt    Duration `yaml:"speech_at"`
	SpeechEvery Duration `yaml:"speech_every"`
	// Interrupt is said InterruptAfter into every reply the speaker plays.
	Interrupt      string   `yaml:"interrupt"`
	InterruptAfter Duration `yaml:"interrupt_after"`
}

// Conversation configures turn-taking.
type Conversation struct {
	// AEC: in VAD mode keep listening while the reply plays.
	AEC        bool     `yaml:"aec"`
	JitterLead Duration `yaml:"jitter_lead"`
	// ReplyTimeout: with the microphone paused for a reply (VAD without
	// AEC), listening resumes when the server has sent nothing for the turn
	// for this long.
	ReplyTimeout  Duration `yaml:"reply_timeout"`
	ControlSocket string   `yaml:"control_socket"`
	// PushToTalkKey: use a key on stdin for push-to-talk when it is a terminal.
	PushToTalkKey bool    `yaml:"push_to_talk_key"`
	GPIO          GPIO    `yaml:"gpio"`
	Earcons       Earcons `yaml:"earcons"`
	// Hooks maps an event name (see HookEvents) to a shell command.
	Hooks map[string]string `yaml:"hooks"`
	// WakeWord starts turns by a spoken phrase (wakeword.go).
	WakeWord WakeWord `yaml:"wake_word"`
}

// HookEvents are the event names accepted as keys of conversation.hooks.
var HookEvents = []string{"text", "emoji", "speak", "listen_start", "listen_stop", "turn_end", "turn_failed", "link_down", "link_up", "wake"}

// GPIO names a push-to-talk button line. Chip "" or Line -1 means none.
type GPIO struct {
	Chip string `yaml:"chip"`
	Line int    `yaml:"line"`
}

// Earcons are sound files played when listening starts and ends ("" =
// none), and when a turn fails because the server cannot be reached or
// does not answer it (EarconBuiltin = a generated sound).
type Earcons struct {
	ListenStart string `yaml:"listen_start"`
	ListenEnd   string `yaml:"listen_end"`
	// Wake is played when the wake word is heard.
	Wake        string `yaml:"wake"`
	Unreachable string `yaml:"unreachable"`
}

// EarconBuiltin as an earcon's file names the host's own generated sound.
const EarconBuiltin = "builtin"

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Listen is the address of http://ADDRESS/metrics; "" (the default)
	// serves nothing.
	Listen string `yaml:"listen"`
	// Hosts are names (in DNS, or the hosts file) that requests may name
	// besides the address, loopback names and the machine's host name;
	// another name is refused (DNS rebinding).
	Hosts []string `yaml:"hosts"`
}

// MCP configures standard MCP servers used as providers, and the host as an
// MCP server for desktop MCP clients.
type MCP struct {
	// Servers maps a name to a server, in the `mcpServers` shape of desktop
	// MCP clients (a top-level mcpServers key is accepted too).
	Servers map[string]MCPServer `yaml:"servers"`
	// ServersFile names a JSON file in the mcpServers format of desktop
	// clients (Claude Desktop's claude_desktop_config.json, say), imported
	// as is beside Servers; its unknown fields draw a warning.
	ServersFile string `yaml:"servers_file"`
	// StartTimeout bounds a server's start: its program, initialize and
	// the first tools/list (npx may download a package first).
	StartTimeout Duration `yaml:"start_timeout"`
	Serve        MCPServe `yaml:"serve"`
	// Order names the servers of Servers in the order the file lists them
	// (servers set only from the environment or --set follow, by name). Of
	// two servers offering one tool name, the one listed first owns it.
	Order []string `yaml:"-"`
}

// MCPServer is one entry of mcp.servers: Command (+Args, Env, Cwd) for a
// server on stdio, or URL (+Headers) for one over Streamable HTTP (the
// legacy SSE transport is tried when the server only speaks that). ${VAR}
// and ${VAR:-default} in its strings come from the environment. Other keys
// (of other clients) are kept in Extra, warned about and ignored.
type MCPServer struct {
	Type    string            `yaml:"type,omitempty"` // stdio | http | sse; "" = from command or url
	Command string            `yaml:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" cfg:"secret"`
	Cwd     string            `yaml:"cwd,omitempty"`
	URL     string            `yaml:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" cfg:"secret"`
	// Disabled servers are not started.
	Disabled bool `yaml:"disabled,omitempty"`
	// Timeout is the deadline of a call to one of the server's tools
	// (0 = services.timeout): a duration ("30s") or, as desktop clients
	// write it, a number of seconds.
	Timeout Seconds `yaml:"timeout,omitempty"`
	// AllowedTools, when not empty, are the only tools offered; ExcludedTools
	// never are. Names or glob patterns.
	AllowedTools  []string `yaml:"allowed_tools,omitempty"`
	ExcludedTools []string `yaml:"excluded_tools,omitempty"`
	// Prefix goes before every tool name in the register.
	Prefix string `yaml:"prefix,omitempty"`
	// Roots are the folders (or URIs) the server is told about (roots/list).
	// None by default: some servers replace the folders on their command
	// line with these, so a default would change what they may touch.
	Roots []string `yaml:"roots,omitempty"`
	// Sandbox grants the server folders to read or write beyond its own.
	Sandbox Grant          `yaml:"sandbox,omitempty"`
	Extra   map[string]any `yaml:",inline"`
}

// MCPServe offers the host's services to MCP clients over Streamable HTTP
// (`agenthost mcp` serves them on stdio without any of this).
type MCPServe struct {
	// Listen is HOST:PORT of http://HOST:PORT/mcp; "" (the default) serves
	// nothing. Keep it on loopback unless a token guards it.
	Listen string `yaml:"listen"`
	// Token, when set (or read from TokenFile), is the bearer token every
	// request must carry.
	Token     string `yaml:"token" cfg:"secret"`
	TokenFile string `yaml:"token_file"`
	// AllowedOrigins are the browser origins accepted besides localhost.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// Hosts are names requests may name besides the address, loopback
	// names and the machine's host name (as metrics.hosts).
	Hosts []string `yaml:"hosts"`
	// MaxSessions bounds the MCP sessions open at once; a client asking
	// for one more is refused (503) until one closes or times out.
	MaxSessions int `yaml:"max_sessions"`
	// SessionTimeout closes a session that sent no request for this long.
	SessionTimeout Duration `yaml:"session_timeout"`
	// MaxConnections bounds the connections open at once (more wait for a
	// free one), MaxConnectionsPerClient those from one address (more are
	// refused with 503).
	MaxConnections          int `yaml:"max_connections"`
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// MaxCalls bounds the MCP clients' calls running at once, a budget of
	// their own beside services.max_in_flight (the voice server's), and
	// MaxCallsPerSession those of one session.
	MaxCalls           int `yaml:"max_calls"`
	MaxCallsPerSession int `yaml:"max_calls_per_session"`
}

// Default returns the built-in defaults.
func Default() *Config {
	return &Config{
		Server: Server{
			Address: "127.0.0.1:8009",
			Params: Params{
				Format: "pcm", InputAudioFormat: "pcm", Mode: "manual", EmojiMode: "false",
				Extra: map[string]string{},
			},
			DialTimeout: Duration(5e9),
			AuthTimeout: Duration(3e9),
			Keepalive:   Duration(4 * 60e9),
			Liveness:    Liveness{AnswerTimeout: Duration(5e9), TCPUserTimeout: Duration(10e9), TCPKeepalive: Duration(15e9)},
			Reconnect:   Backoff{Base: Duration(500e6), Cap: Duration(30e9)},
			MaxFrame:    1 << 20,
		},
		Log: Log{Level: "info", Format: "text"},
		Services: Services{
			Timeout:                Duration(10e9),
			Timeouts:               map[string]Duration{},
			MaxResult:              64 << 10,
			MaxInFlight:            64,
			MaxInFlightPerProvider: 16,
			MaxDescription:         8 << 10,
			MaxRegister:            512 << 10,
			Prefixes:               map[string]string{},
			Builtins:               true,
			Allow:                  []string{},
			Deny:                   []string{},
		},
		Plugins: Plugins{
			Dirs:           []string{"/usr/lib/agenthost/plugins"},
			StartTimeout:   Duration(10e9),
			Debounce:       Duration(300e6),
			StopGrace:      Duration(5e9),
			SHA256:         map[string]string{},
			Config:         map[string]any{},
			Restart:        Restart{Base: Duration(1e9), Cap: Duration(60e9), MaxCrashes: 5, Window: Duration(5 * 60e9)},
			Lazy:           true,
			LazyOverrides:  map[string]bool{},
			IdleStop:       Duration(10 * 60e9),
			HealthInterval: Duration(60e9),
			Sandbox:        map[string]Grant{},
			Audio:          PluginAudio{Deny: []string{}, Classes: []string{"earcon", "announcement", "media"}, MaxStreams: 2, MaxAnnouncement: Duration(60e9)},
			Network:        PluginNetwork{Allow: []string{}},
		},
		Audio: Audio{
			Backend: "portaudio", Input: "default", Output: "default",
			Rate: 16000, Frame: Duration(60e6),
			Retry:    Backoff{Base: Duration(1e9), Cap: Duration(30e9)},
			Mix:      Mix{DuckDB: -20, Ramp: Duration(20e6), MediaWhileActive: "duck", KeepFed: Duration(20e6)},
			Capture:  Capture{EchoTail: Duration(200e6), EchoDelaySearch: Duration(400e6), NoiseLevel: -20},
			EchoRoom: EchoRoom{Delay: Duration(60e6), Gain: -10, Reverb: Duration(150e6), Noise: -65, SpeechAt: Duration(1e9), InterruptAfter: Duration(1e9)},
		},
		Conversation: Conversation{
			JitterLead:    Duration(120e6),
			ReplyTimeout:  Duration(30e9),
			PushToTalkKey: true,
			GPIO:          GPIO{Line: -1},
			Earcons:       Earcons{Unreachable: EarconBuiltin},
			Hooks:         map[string]string{},
			WakeWord:      defaultWakeWord(),
		},
		Device:    defaultDevice(),
		Sandbox:   Sandbox{Mode: string(sandbox.Auto)},
		Household: defaultHousehold(),
		Metrics:   Metrics{Hosts: []string{}},
		MCP: MCP{Servers: map[string]MCPServer{}, StartTimeout: Duration(30e9), Serve: MCPServe{
			AllowedOrigins: []string{}, Hosts: []string{}, MaxSessions: 64, SessionTimeout: Duration(30 * 60e9),
			MaxConnections: 64, MaxConnectionsPerClient: 16, MaxCalls: 16, MaxCallsPerSession: 4,
		}},
	}
}

// BearerToken returns the token MCP clients must send to mcp.serve: Token,
// else the trimmed contents of TokenFile ($VARS expanded), else "" (none).
func (s MCPServe) BearerToken() (string, error) {
	if t := strings.TrimSpace(s.Token); t != "" {
		return t, nil
	}
	if s.TokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(os.ExpandEnv(s.TokenFile))
	if err != nil {
		return "", fmt.Errorf("mcp.serve.token_file: %w", err)
	}
	if t := strings.TrimSpace(string(b)); t != "" {
		return t, nil
	}
	return "", fmt.Errorf("mcp.serve.token_file: %s is empty", s.TokenFile)
}

// Token returns the server token: server.token if set, else the trimmed
// contents of server.token_file (with $VARS expanded in the path, e.g.
// $CREDENTIALS_DIRECTORY/token), else "". It reads the file on every call, so
// a rotated token is picked up on the next connect. Errors never contain the
// token.
func (c *Config) Token() (string, error) {
	if t := strings.TrimSpace(c.Server.Token); t != "" {
		return t, nil
	}
	if c.Server.TokenFile == "" {
		return "", nil
	}
	path := os.ExpandEnv(c.Server.TokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		// A systemd credential that was never installed (the packaged
		// config names one): no token, which the log says at connect.
		if strings.Contains(c.Server.TokenFile, "$CREDENTIALS_DIRECTORY") && (os.Getenv("CREDENTIALS_DIRECTORY") == "" || errors.Is(err, fs.ErrNotExist)) {
			return "", nil
		}
		return "", fmt.Errorf("server.token_file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("server.token_file: %s is empty; put the server token in it", path)
	}
	if strings.Contains(t, "##") {
		return "", fmt.Errorf("server.token_file: the token in %s contains \"##\", which cannot be sent in AUTH", path)
	}
	return t, nil
}
