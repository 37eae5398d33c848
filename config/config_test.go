package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/proctree"
)

// writeConfig writes body to a fresh agenthost.yaml and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agenthost.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clearEnv unsets every AGENTHOST_ variable for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, EnvPrefix) {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func mustLoad(t *testing.T, path string, ov map[string]any) *Config {
	t.Helper()
	c, err := Load(path, ov)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func problems(t *testing.T, err error) []string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *config.Error, got %T: %v", err, err)
	}
	return e.Problems
}

func TestExampleLoadsCleanAndMatchesDefaults(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, "../agenthost.example.yaml", nil)
	if len(c.Warnings) > 0 {
		t.Errorf("example gives warnings: %q", c.Warnings)
	}
	c.Path = ""
	if want := Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("example differs from the defaults:\nexample:\n%s\ndefaults:\n%s", c.Redacted(), want.Redacted())
	}

	// Every key is in the example.
	b, err := os.ReadFile("../agenthost.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := &loader{file: "example", lines: map[string]int{}, origin: map[string]string{}, failed: map[string]bool{}}
	if _, err := l.parseFile(b); err != nil {
		t.Fatal(err)
	}
	for _, p := range knownPaths() {
		if _, ok := l.lines[pathKey(p)]; !ok {
			t.Errorf("agenthost.example.yaml lacks %s", dotted(p))
		}
	}
}

func TestDefaultsOnly(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, "", nil)
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load(\"\") differs from Default():\n%s", c.Redacted())
	}
	if c.Path != "" || len(c.Warnings) != 0 {
		t.Errorf("Path %q, Warnings %q", c.Path, c.Warnings)
	}
}

func TestMissingFile(t *testing.T) {
	clearEnv(t)
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(missing, nil)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing explicit file: err = %v, want it to name %s", err, missing)
	}
	if _, statErr := os.Stat(DefaultPath); errors.Is(statErr, os.ErrNotExist) {
		c, err := Load(DefaultPath, nil)
		if err != nil {
			t.Fatalf("missing default file should be fine: %v", err)
		}
		if c.Path != "" {
			t.Errorf("Path = %q for a missing default file", c.Path)
		}
	}
}

func TestLoadedFile(t *testing.T) {
	clearEnv(t)
	p := writeConfig(t, `
server:
  address: voice.example.com:9000
  tls: true
  token_file: /run/token
  params: {mode: vad, emoji_mode: true, voiceid: "Chinese (Mandarin)_Wise_Women"}
  keepalive: 90s
  max_frame: 512KiB
log: {level: debug, format: json}
services:
  max_result: 1MB
  max_in_flight: 8
plugins:
  dirs: [/a, /b]
  restart: {max_crashes: 3}
audio: {backend: file, input_file: in.wav, rate: 24000}
conversation: {gpio: {chip: gpiochip0, line: 17}}
`)
	c := mustLoad(t, p, nil)
	s := c.Server
	if s.Address != "voice.example.com:9000" || !s.TLS || s.TokenFile != "/run/token" {
		t.Errorf("server = %+v", s)
	}
	if s.Params.Mode != "vad" || s.Params.EmojiMode != "true" || s.Params.Format != "pcm" {
		t.Errorf("params = %+v", s.Params)
	}
	if s.Keepalive.D() != 90*time.Second || s.MaxFrame != 512<<10 || s.DialTimeout.D() != 5*time.Second {
		t.Errorf("keepalive %v max_frame %v dial %v", s.Keepalive, s.MaxFrame, s.DialTimeout)
	}
	if c.Services.MaxResult != 1000000 || c.Services.MaxInFlight != 8 {
		t.Errorf("services = %+v", c.Services)
	}
	if !reflect.DeepEqual(c.Plugins.Dirs, []string{"/a", "/b"}) || c.Plugins.Restart.MaxCrashes != 3 ||
		c.Plugins.Restart.Window.D() != 5*time.Minute {
		t.Errorf("plugins = %+v", c.Plugins)
	}
	if c.Audio.Backend != "file" || c.Audio.Rate != 24000 || c.Conversation.GPIO.Line != 17 {
		t.Errorf("audio %+v conversation %+v", c.Audio, c.Conversation)
	}
	if c.Path != p {
		t.Errorf("Path = %q", c.Path)
	}
	want := [][2]string{{"voiceid", "Chinese (Mandarin)_Wise_Women"}, {"format", "pcm"}, {"input_audio_format", "pcm"}, {"mode", "vad"}, {"emoji_mode", "true"}}
	if got := s.Params.Pairs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Pairs() = %q, want %q", got, want)
	}
}

func TestNullKeepsDefault(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, writeConfig(t, "server:\n  address:\n  params:\nplugins:\n  dirs:\nlog:\n"), nil)
	d := Default()
	if c.Server.Address != d.Server.Address || !reflect.DeepEqual(c.Plugins.Dirs, d.Plugins.Dirs) || c.Server.Params.Mode != "manual" {
		t.Errorf("null did not keep defaults: %+v %v", c.Server, c.Plugins.Dirs)
	}
	c = mustLoad(t, writeConfig(t, ""), nil)
	c.Path = ""
	if !reflect.DeepEqual(c, d) {
		t.Errorf("empty file differs from defaults")
	}
}

func TestBadFile(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name, yaml string
		want       []string // fragments of one problem line
	}{
		{"typo", "server:\n  adress: 1.2.3.4:80\n", []string{":2: server.adress: unknown key", "did you mean server.address?"}},
		{"typo nested", "server:\n  reconnect:\n    bsae: 1s\n", []string{":3: server.reconnect.bsae: unknown key", "did you mean server.reconnect.base?"}},
		{"typo top", "servr:\n  address: x:1\n", []string{":1: servr: unknown key", "did you mean server?"}},
		{"misplaced", "server:\n  level: debug\n", []string{":2: server.level: unknown key", "did you mean log.level?"}},
		{"unknown no hint", "log:\n  zzzzzzzzzz: 1\n", []string{":2: log.zzzzzzzzzz: unknown key", "the keys under log are level, format"}},
		{"bool", "server:\n  tls: maybe\n", []string{":2: server.tls:", `"maybe" is not a boolean; use true or false`}},
		{"duration word", "services:\n  timeout: ten\n", []string{":2: services.timeout:", `"ten" is not a duration`, "10s"}},
		{"duration number", "services:\n  timeout: 10\n", []string{":2: services.timeout:", "10 is not a duration; write it with a unit"}},
		{"size", "services:\n  max_result: 64 kilobytes\n", []string{":2: services.max_result:", `"64 kilobytes" is not a size`, "64KiB"}},
		{"int", "services:\n  max_in_flight: many\n", []string{":2: services.max_in_flight:", `"many" is not a whole number`}},
		{"list", "plugins:\n  dirs: {a: b}\n", []string{":2: plugins.dirs:", "expected a list"}},
		{"section scalar", "server: 5\n", []string{":1: server:", "expected a mapping"}},
		{"map scalar", "services:\n  timeouts: 5s\n", []string{":2: services.timeouts:", "expected a mapping"}},
		{"timeouts value", "services:\n  timeouts:\n    slow.tool: forever\n", []string{":3: services.timeouts.slow.tool:", `"forever" is not a duration`}},
		{"address", "server:\n  address: localhost\n", []string{":2: server.address:", `"localhost" is not host:port`}},
		{"port", "server:\n  address: localhost:http\n", []string{":2: server.address:", `port "http" is not a number`}},
		{"format", "server:\n  params:\n    format: mp3\n", []string{":3: server.params.format:", `"mp3" is not one of pcm, opus`}},
		{"mode hint", "server:\n  params:\n    mode: manul\n", []string{`"manul" is not one of manual, vad, auto; did you mean manual?`}},
		{"emoji", "server:\n  params:\n    emoji_mode: yes\n", []string{`server.params.emoji_mode: "yes" is not one of false, true, dimi, dimi2, jfb`}},
		{"param name", "server:\n  params:\n    \"a:b\": c\n", []string{":3: server.params.a:b:", `cannot be empty or contain "##" or ":"`}},
		{"param value", "server:\n  params:\n    lang: \"x##y\"\n", []string{":3: server.params.lang:", `"##"`}},
		{"level", "log:\n  level: verbose\n", []string{":2: log.level:", `"verbose" is not one of debug, info, warn, error`}},
		{"log format", "log:\n  format: xml\n", []string{`log.format: "xml" is not one of text, json`}},
		{"backend", "audio:\n  backend: alsa\n", []string{`audio.backend: "alsa" is not one of portaudio, file, echo_room, none`}},
		{"file backend", "audio:\n  backend: file\n", []string{"audio.backend: the file backend needs audio.input_file"}},
		{"zero duration", "server:\n  dial_timeout: 0s\n", []string{":2: server.dial_timeout: 0s must be more than 0"}},
		{"negative duration", "audio:\n  frame: -60ms\n", []string{"audio.frame: -60ms must be more than 0"}},
		{"zero size", "server:\n  max_frame: 0\n", []string{"server.max_frame: must be more than 0"}},
		{"cap below base", "server:\n  reconnect: {base: 10s, cap: 1s}\n", []string{"server.reconnect.cap: 1s is less than server.reconnect.base (10s)"}},
		{"both tokens", "server:\n  token: abc\n  token_file: /t\n", []string{":2: server.token: both server.token and server.token_file are set"}},
		{"sha", "plugins:\n  sha256:\n    clock: abc\n", []string{":3: plugins.sha256.clock:", "not a SHA-256 digest"}},
		{"hook event", "conversation:\n  hooks:\n    on_text: echo\n", []string{":3: conversation.hooks.on_text:", `"on_text" is not an event`, "did you mean text?"}},
		{"hook empty", "conversation:\n  hooks:\n    text: \"\"\n", []string{"conversation.hooks.text: the command is empty"}},
		{"gpio", "conversation:\n  gpio: {chip: gpiochip0}\n", []string{"conversation.gpio.line: conversation.gpio.chip is set but no line is"}},
		{"mcp neither", "mcp:\n  servers:\n    fs: {args: [x]}\n", []string{":3: mcp.servers.fs: set command", "or url"}},
		{"mcp both", "mcp:\n  servers:\n    fs: {command: x, url: http://h/}\n", []string{":3: mcp.servers.fs: set command or url, not both"}},
		{"mcp url", "mcp:\n  servers:\n    fs:\n      url: ftp://h/\n", []string{":4: mcp.servers.fs.url: not an http:// or https:// URL"}},
		{"mcp headers", "mcp:\n  servers:\n    fs:\n      command: x\n      headers: {A: b}\n", []string{"mcp.servers.fs.headers: headers apply to url servers only"}},
		{"mcp args type", "mcp:\n  servers:\n    fs:\n      command: x\n      args: {a: 1}\n", []string{":5: mcp.servers.fs.args: expected a list"}},
		{"per-provider bound", "services:\n  max_in_flight_per_provider: 0\n", []string{":2: services.max_in_flight_per_provider: 0 must be more than 0"}},
		{"mcp serve bound", "mcp:\n  serve:\n    max_calls_per_session: 0\n", []string{":3: mcp.serve.max_calls_per_session: 0 must be more than 0"}},
		{"mcp session timeout", "mcp:\n  serve:\n    session_timeout: 0s\n", []string{":3: mcp.serve.session_timeout: 0s must be more than 0"}},
		{"alias twice", "mcpServers: {a: {command: x}}\nmcp:\n  servers: {b: {command: y}}\n", []string{"given both as mcpServers and as mcp.servers"}},
		{"not a mapping", "- a\n- b\n", []string{":1: the file must be a mapping"}},
		{"params extra env-only", "server:\n  params:\n    x: [1]\n", []string{":3: server.params.x: expected a single value"}},
		{"syntax", "server:\n  address: [\n", []string{"agenthost.yaml:2: did not find expected node content (YAML syntax)"}},
		{"tab", "server:\n\taddress: x\n", []string{"agenthost.yaml:2: ", "a tab; YAML indents with spaces", "(YAML syntax)"}},
		{"tab after a key", "log:\n  level:\tinfo\nserver:\n\taddress: x\n", []string{"agenthost.yaml:4: ", "a tab; YAML indents with spaces"}},
		{"duplicate", "log:\n  level: info\n  level: debug\n", []string{"agenthost.yaml:3: mapping key \"level\" already defined at line 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.yaml)
			_, err := Load(p, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				ok := true
				for _, w := range tc.want {
					ok = ok && strings.Contains(line, w)
				}
				if ok {
					return
				}
			}
			t.Errorf("no line of the error has all of %q:\n%v", tc.want, err)
		})
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	clearEnv(t)
	p := writeConfig(t, `
server:
  adress: x
  tls: maybe
  params: {format: mp3}
services:
  timeout: ten
log: {level: loud}
`)
	ps := problems(t, func() error { _, err := Load(p, nil); return err }())
	want := []string{":3: server.adress", ":4: server.tls", ":5: server.params.format", ":7: services.timeout", ":8: log.level"}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(ps), len(want), strings.Join(ps, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(ps[i], w) || !strings.HasPrefix(ps[i], p+":") {
			t.Errorf("problem %d = %q, want it to start with the file and contain %q", i, ps[i], w)
		}
	}
	// A value that failed to decode is not reported again by validation
	// ("ten" is not also "must be more than 0").
	for _, pr := range ps {
		if strings.Contains(pr, "more than 0") {
			t.Errorf("follow-on problem reported: %s", pr)
		}
	}
}

func TestWarnings(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, writeConfig(t, "server:\n  keepalive: 5m\nmcpServers:\n  fs: {command: x, comand: y, type: stdio}\n"), nil)
	if len(c.Warnings) != 2 {
		t.Fatalf("warnings = %q", c.Warnings)
	}
	if !strings.Contains(c.Warnings[0], ":2: server.keepalive: 5m is not below 5m") {
		t.Errorf("keepalive warning = %q", c.Warnings[0])
	}
	if !strings.Contains(c.Warnings[1], "mcp.servers.fs.comand: not a field of an MCP server and ignored; did you mean command?") {
		t.Errorf("mcp warning = %q", c.Warnings[1])
	}
	// Warnings travel with the error too.
	_, err := Load(writeConfig(t, "server:\n  keepalive: 10m\nlog: {level: x}\n"), nil)
	var e *Error
	if !errors.As(err, &e) || len(e.Warnings) != 1 {
		t.Errorf("err = %v, warnings %v", err, e)
	}
}

func TestPrecedence(t *testing.T) {
	clearEnv(t)
	p := writeConfig(t, "server:\n  address: file:1\n  token_file: /from/file\nlog:\n  level: warn\n")

	c := mustLoad(t, p, nil)
	if c.Server.Address != "file:1" || c.Log.Level != "warn" {
		t.Fatalf("file layer: %+v", c.Server)
	}

	t.Setenv("AGENTHOST_SERVER_ADDRESS", "env:2")
	t.Setenv("AGENTHOST_SERVER_TOKEN_FILE", "/from/env")
	t.Setenv("AGENTHOST_SERVER_PARAMS_MODE", "vad")
	t.Setenv("AGENTHOST_SERVER_TLS", "true")
	t.Setenv("AGENTHOST_SERVER_DIAL_TIMEOUT", "2s")
	t.Setenv("AGENTHOST_PLUGINS_DIRS", "/a, /b")
	t.Setenv("AGENTHOST_SERVICES_MAX_RESULT", "1MiB")
	t.Setenv("AGENTHOST_CONFIG", "/ignored.yaml")
	c = mustLoad(t, p, nil)
	if c.Server.Address != "env:2" || c.Server.TokenFile != "/from/env" || c.Server.Params.Mode != "vad" ||
		!c.Server.TLS || c.Server.DialTimeout.D() != 2*time.Second || c.Log.Level != "warn" {
		t.Errorf("env layer: %+v", c.Server)
	}
	if !reflect.DeepEqual(c.Plugins.Dirs, []string{"/a", "/b"}) || c.Services.MaxResult != 1<<20 {
		t.Errorf("env list/size: %v %v", c.Plugins.Dirs, c.Services.MaxResult)
	}

	c = mustLoad(t, p, map[string]any{
		"server.address":     "flag:3",
		"log.level":          "debug",
		"server.tls":         false,
		"services.timeout":   30 * time.Second,
		"plugins.dirs":       []string{"./bin/plugins"},
		"server.params.seed": "42", // free-form extra
	})
	if c.Server.Address != "flag:3" || c.Log.Level != "debug" || c.Server.TLS || c.Services.Timeout.D() != 30*time.Second {
		t.Errorf("override layer: %+v %+v", c.Server, c.Log)
	}
	if !reflect.DeepEqual(c.Plugins.Dirs, []string{"./bin/plugins"}) || c.Server.Params.Extra["seed"] != "42" {
		t.Errorf("override list/extra: %v %v", c.Plugins.Dirs, c.Server.Params.Extra)
	}
	if c.Server.TokenFile != "/from/env" {
		t.Errorf("env value lost under overrides: %q", c.Server.TokenFile)
	}

	// Without a file: defaults, env, overrides.
	c = mustLoad(t, "", map[string]any{"log.level": "error"})
	if c.Server.Address != "env:2" || c.Log.Level != "error" {
		t.Errorf("no file: %q %q", c.Server.Address, c.Log.Level)
	}
}

func TestBadEnvAndOverrides(t *testing.T) {
	clearEnv(t)
	t.Setenv("AGENTHOST_SERVER_ADRESS", "x:1")
	t.Setenv("AGENTHOST_SERVER_TLS", "maybe")
	t.Setenv("AGENTHOST_SERVICES_TIMEOUTS_FOO", "1s")
	_, err := Load("", map[string]any{"server.tlss": "true", "log.level.x": "y", "server.params.format": "mp3"})
	ps := problems(t, err)
	want := [][]string{
		{"environment AGENTHOST_SERVER_ADRESS: no config key has this name; did you mean AGENTHOST_SERVER_ADDRESS?"},
		{"environment AGENTHOST_SERVER_TLS: server.tls:", `"maybe" is not a boolean`},
		{"environment AGENTHOST_SERVICES_TIMEOUTS_FOO: free-form entries of services.timeouts cannot be set from the environment"},
		{"override: server.tlss: unknown key; did you mean server.tls?"},
		{"override: log.level.x: unknown key"},
		{"override: server.params.format:", `"mp3" is not one of pcm, opus`},
	}
	all := strings.Join(ps, "\n")
	for _, w := range want {
		found := false
		for _, p := range ps {
			ok := true
			for _, f := range w {
				ok = ok && strings.Contains(p, f)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("no problem has %q:\n%s", w, all)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(ps), len(want), all)
	}
}

func TestFreeFormPassThrough(t *testing.T) {
	clearEnv(t)
	digest := strings.Repeat("ab", 32)
	p := writeConfig(t, `
server:
  params:
    mode: auto
    character: bob
    speed: 1.5
    loud: true
services:
  timeouts:
    self.audio_speaker.set_volume: 2s
    files.create_file: 1m
  prefixes: {weather-mcp: wx_}
plugins:
  sha256: {clock: `+digest+`}
  config:
    files:
      root: /srv/files
      limits: {max: 10, kinds: [txt, md]}
    clock: {}
conversation:
  hooks:
    emoji: /usr/local/bin/face "$EMOJI"
    turn_end: logger done
mcpServers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /srv]
    env: {DEBUG: "1"}
    type: stdio
    disabled: false
  web:
    url: https://mcp.example.com/mcp
    headers: {Authorization: Bearer abc}
    prefix: web_
    timeout: 30s
`)
	c := mustLoad(t, p, map[string]any{"services.timeouts.x.y.z": "3s", "plugins.config.clock.tz": "UTC"})
	if want := map[string]string{"character": "bob", "speed": "1.5", "loud": "true"}; !reflect.DeepEqual(c.Server.Params.Extra, want) {
		t.Errorf("params extra = %v", c.Server.Params.Extra)
	}
	if got := c.Server.Params.Pairs(); len(got) != 7 || got[2] != [2]string{"mode", "auto"} || got[4] != [2]string{"character", "bob"} {
		t.Errorf("Pairs() = %q", got)
	}
	if c.Services.TimeoutFor("self.audio_speaker.set_volume").D() != 2*time.Second ||
		c.Services.TimeoutFor("files.create_file").D() != time.Minute ||
		c.Services.TimeoutFor("x.y.z").D() != 3*time.Second ||
		c.Services.TimeoutFor("other").D() != 10*time.Second {
		t.Errorf("timeouts = %v", c.Services.Timeouts)
	}
	if c.Services.Prefixes["weather-mcp"] != "wx_" || c.Plugins.SHA256["clock"] != digest {
		t.Errorf("prefixes %v sha256 %v", c.Services.Prefixes, c.Plugins.SHA256)
	}
	wantFiles := map[string]any{"root": "/srv/files", "limits": map[string]any{"max": 10, "kinds": []any{"txt", "md"}}}
	if !reflect.DeepEqual(c.Plugins.Config["files"], wantFiles) {
		t.Errorf("plugins.config.files = %#v", c.Plugins.Config["files"])
	}
	if !reflect.DeepEqual(c.Plugins.Config["clock"], map[string]any{"tz": "UTC"}) {
		t.Errorf("plugins.config.clock = %#v", c.Plugins.Config["clock"])
	}
	if c.Conversation.Hooks["emoji"] != `/usr/local/bin/face "$EMOJI"` || len(c.Conversation.Hooks) != 2 {
		t.Errorf("hooks = %v", c.Conversation.Hooks)
	}
	fs, web := c.MCP.Servers["fs"], c.MCP.Servers["web"]
	if fs.Command != "npx" || len(fs.Args) != 3 || fs.Env["DEBUG"] != "1" || fs.Type != "stdio" || fs.Disabled {
		t.Errorf("fs = %+v", fs)
	}
	if web.URL != "https://mcp.example.com/mcp" || web.Headers["Authorization"] != "Bearer abc" || web.Prefix != "web_" || web.Timeout.D() != 30*time.Second {
		t.Errorf("web = %+v", web)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}
}

func TestMCPAlias(t *testing.T) {
	clearEnv(t)
	a := mustLoad(t, writeConfig(t, "mcpServers:\n  fs: {command: x, args: [a]}\n"), nil)
	b := mustLoad(t, writeConfig(t, "mcp:\n  servers:\n    fs: {command: x, args: [a]}\n"), nil)
	if !reflect.DeepEqual(a.MCP, b.MCP) || a.MCP.Servers["fs"].Command != "x" {
		t.Errorf("alias: %+v vs %+v", a.MCP, b.MCP)
	}
	// Problems inside the alias point at the alias's lines.
	_, err := Load(writeConfig(t, "log: {}\nmcpServers:\n  fs:\n    url: nope\n"), nil)
	if err == nil || !strings.Contains(err.Error(), ":4: mcp.servers.fs.url") {
		t.Errorf("err = %v", err)
	}
}

func TestToken(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	tf := filepath.Join(dir, "token")
	if err := os.WriteFile(tf, []byte("  eyJ.file.token \n\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c := mustLoad(t, "", map[string]any{"server.token_file": tf})
	if tok, err := c.Token(); err != nil || tok != "eyJ.file.token" {
		t.Errorf("Token() = %q, %v", tok, err)
	}

	t.Setenv("CREDS", dir)
	c = mustLoad(t, "", map[string]any{"server.token_file": "$CREDS/token"})
	if tok, err := c.Token(); err != nil || tok != "eyJ.file.token" {
		t.Errorf("Token() with $VAR = %q, %v", tok, err)
	}

	c = mustLoad(t, "", map[string]any{"server.token": " eyJ.inline "})
	if tok, err := c.Token(); err != nil || tok != "eyJ.inline" {
		t.Errorf("Token() = %q, %v", tok, err)
	}

	c = mustLoad(t, "", nil)
	if tok, err := c.Token(); err != nil || tok != "" {
		t.Errorf("no token: %q, %v", tok, err)
	}

	missing := filepath.Join(dir, "missing")
	c = mustLoad(t, "", map[string]any{"server.token_file": missing})
	if _, err := c.Token(); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing token file: %v", err)
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	c = mustLoad(t, "", map[string]any{"server.token_file": empty})
	if _, err := c.Token(); err == nil || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: %v", err)
	}
}

const secret = "eyJhbGciOiJIUzI1NiJ9.s3cr3t-PAYLOAD.sig"

func TestSecretsNeverShown(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		yaml string
		ov   map[string]any
		env  map[string]string
	}{
		{"both set", "server:\n  token: " + secret + "\n  token_file: /x\n", nil, nil},
		{"hashes", "server:\n  token: \"" + secret + "##mode:vad\"\n", nil, nil},
		{"token as list", "server:\n  token: [" + secret + "]\n", nil, nil},
		{"token as map", "server:\n  token: {" + secret + ": 1}\n", nil, nil},
		{"env both", "server:\n  token_file: /x\n", nil, map[string]string{"AGENTHOST_SERVER_TOKEN": secret}},
		{"env typo", "", nil, map[string]string{"AGENTHOST_SERVER_TOKN": secret}},
		{"override", "server:\n  token_file: /x\n", map[string]any{"server.token": secret}, nil},
		{"override typo", "", map[string]any{"server.tokn": secret}, nil},
		{"header type", "mcp:\n  servers:\n    w: {url: http://h/, headers: {A: [" + secret + "]}}\n", nil, nil},
		{"env type", "mcp:\n  servers:\n    w: {command: x, env: {K: {" + secret + ": 1}}}\n", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeConfig(t, tc.yaml+"server2: {}\n"), tc.ov)
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the secret:\n%v", err)
			}
		})
	}

	// Token() errors do not show the token.
	tf := filepath.Join(dir, "tok")
	os.WriteFile(tf, []byte(secret+"##x"), 0o600)
	c := mustLoad(t, "", map[string]any{"server.token_file": tf})
	if _, err := c.Token(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Token() err = %v", err)
	}
}

func TestRedacted(t *testing.T) {
	clearEnv(t)
	p := writeConfig(t, `
server:
  token: `+secret+`
mcpServers:
  fs: {command: x, env: {GITHUB_TOKEN: ghp_s3cr3t}}
  web:
    url: https://user:s3cr3t@mcp.example.com/mcp?token=s3cr3t&v=2
    headers: {Authorization: Bearer s3cr3t}
    api_key: s3cr3t
plugins:
  config:
    weather: {api_key: s3cr3t, city: Paris, nested: [{password: s3cr3t}]}
`)
	c := mustLoad(t, p, nil)
	out := c.Redacted()
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("Redacted shows a secret:\n%s", out)
	}
	for _, want := range []string{`token: '****'`, "GITHUB_TOKEN: '****'", "Authorization: '****'", "user:%2A%2A%2A%2A@mcp.example.com", "/mcp?token=****&v=****", "city: Paris"} {
		if !strings.Contains(out, want) {
			t.Errorf("Redacted lacks %q:\n%s", want, out)
		}
	}
	// Redacted does not change the Config.
	if c.Server.Token != secret || c.MCP.Servers["web"].Headers["Authorization"] != "Bearer s3cr3t" {
		t.Errorf("Redacted modified the config")
	}
	// The no-token case prints an empty token, not a mask.
	if out := Default().Redacted(); !strings.Contains(out, `token: ""`) {
		t.Errorf("empty token rendered wrong:\n%s", out)
	}
}

func TestRedactedRoundTrip(t *testing.T) {
	clearEnv(t)
	p := writeConfig(t, `
server:
  address: h:1
  params: {emoji_mode: dimi, extra: x}
  keepalive: 1m30s
  max_frame: 1500
  reconnect: {base: 250ms, cap: 1h}
services:
  timeouts: {a.b: 1s500ms}
  max_result: 64KB
plugins:
  dirs: []
  config: {p: {a: [1, 2], b: {c: true}}}
conversation:
  jitter_lead: 0s
  hooks: {text: "echo \"$TEXT\""}
mcp:
  servers:
    s: {command: c, args: [a, b], timeout: 2s, type: stdio}
    u: {url: "http://h/mcp"}
`)
	a := mustLoad(t, p, nil)
	b := mustLoad(t, writeConfig(t, a.Redacted()), nil)
	a.Path, b.Path = "", ""
	a.Warnings, b.Warnings = nil, nil // they name the file
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip differs:\n%s\n----\n%s", a.Redacted(), b.Redacted())
	}
}

func TestParseSets(t *testing.T) {
	m, err := ParseSets([]string{"server.address=h:1", "server.params.lang=a=b", "log.level="})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"server.address": "h:1", "server.params.lang": "a=b", "log.level": ""}; !reflect.DeepEqual(m, want) {
		t.Errorf("ParseSets = %v", m)
	}
	if _, err := ParseSets([]string{"novalue"}); err == nil {
		t.Error("want an error for a setting without =")
	}
	// ":" typed for "=": the error names the argument by position and never
	// shows its text, which may hold a secret.
	_, err = ParseSets([]string{"log.level=debug", "server.token:" + secret})
	if err == nil || !strings.Contains(err.Error(), "--set argument 2 is not KEY=VALUE") {
		t.Errorf("err = %v", err)
	}
	if err != nil && (strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "server.token")) {
		t.Errorf("error shows the argument: %v", err)
	}
	_, err = ParseSets([]string{" =" + secret})
	if err == nil || !strings.Contains(err.Error(), "--set argument 1 has no KEY") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("empty key: err = %v", err)
	}
}

// runtimeEnv gives each step of the runtime-folder search a value: a
// configured folder is not set, $RUNTIME_DIRECTORY, /run/agenthost (moved to
// a temporary folder that exists), $XDG_RUNTIME_DIR and the temp folder are.
// It returns the stand-in for /run/agenthost and the temp folder.
func runtimeEnv(t *testing.T) (system, tmp string) {
	t.Helper()
	base := t.TempDir()
	system = filepath.Join(base, "run-agenthost")
	if err := os.Mkdir(system, 0o755); err != nil {
		t.Fatal(err)
	}
	old := systemRuntimeDir
	systemRuntimeDir = system
	t.Cleanup(func() { systemRuntimeDir = old })
	tmp = filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("RUNTIME_DIRECTORY", "/run/sd:/run/other")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	return system, tmp
}

func TestRuntimeDirectory(t *testing.T) {
	system, tmp := runtimeEnv(t)
	c := Default()
	fallback := filepath.Join(tmp, "agenthost-"+strconv.Itoa(os.Getuid()))
	steps := []struct {
		name, want string
		next       func() // removes this step's source
	}{
		{"plugins.runtime_dir", "/configured", func() { c.Plugins.RuntimeDir = "" }},
		{"$RUNTIME_DIRECTORY (first entry)", "/run/sd", func() { os.Unsetenv("RUNTIME_DIRECTORY") }},
		{"/run/agenthost if it exists", system, func() {
			if err := os.Remove(system); err != nil {
				t.Fatal(err)
			}
		}},
		{"$XDG_RUNTIME_DIR/agenthost", "/run/user/1000/agenthost", func() { os.Unsetenv("XDG_RUNTIME_DIR") }},
		{"os.TempDir()/agenthost-<uid>", fallback, func() {}},
	}
	c.Plugins.RuntimeDir = "/configured"
	for _, st := range steps {
		if got := c.Plugins.RuntimeDirectory(); got != st.want {
			t.Errorf("%s: RuntimeDirectory() = %q, want %q", st.name, got, st.want)
		}
		if got, want := c.ControlSocketPath(), filepath.Join(st.want, "control.sock"); got != want {
			t.Errorf("%s: ControlSocketPath() = %q, want %q", st.name, got, want)
		}
		st.next()
	}
	c.Conversation.ControlSocket = "/y.sock"
	if c.ControlSocketPath() != "/y.sock" {
		t.Errorf("configured control socket not used")
	}

	// /run/agenthost must be a folder, not just exist.
	if err := os.WriteFile(system, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := c.Plugins.RuntimeDirectory(); got != fallback {
		t.Errorf("/run/agenthost is a file: RuntimeDirectory() = %q", got)
	}
}

func TestEnsureRuntimeDirectory(t *testing.T) {
	system, tmp := runtimeEnv(t)
	os.Unsetenv("RUNTIME_DIRECTORY")
	os.Unsetenv("XDG_RUNTIME_DIR")
	if err := os.Remove(system); err != nil {
		t.Fatal(err)
	}
	p := Default().Plugins
	want := filepath.Join(tmp, "agenthost-"+strconv.Itoa(os.Getuid()))

	// The temp fallback is created private, and accepted again as it is.
	for i := 0; i < 2; i++ {
		got, err := p.EnsureRuntimeDirectory()
		if err != nil || got != want {
			t.Fatalf("EnsureRuntimeDirectory() = %q, %v; want %q", got, err, want)
		}
		fi, err := os.Lstat(want)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("fallback folder: %v, %v", fi, err)
		}
	}

	// One that group or others may write to is refused: someone else may
	// have made it, or may put a socket in it.
	if err := os.Chmod(want, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "0777") ||
		!strings.Contains(err.Error(), want) {
		t.Errorf("mode 0777: err = %v", err)
	}
	if err := os.Chmod(want, 0o720); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureRuntimeDirectory(); err == nil {
		t.Errorf("mode 0720: no error")
	}
	// One that another user owns is refused (only root can make one here).
	if err := os.Chmod(want, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Lchown(want, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "belongs to user id 65534") {
			t.Errorf("owned by 65534: err = %v", err)
		}
	}

	// So is a symbolic link, even to a private folder of ours, and a file.
	os.Remove(want)
	if err := os.Symlink(t.TempDir(), want); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlink: err = %v", err)
	}
	os.Remove(want)
	if err := os.WriteFile(want, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("file: err = %v", err)
	}

	// Other places are created (0700, with parents) and not held to the
	// ownership rule.
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(xdg, "missing"))
	got, err := p.EnsureRuntimeDirectory()
	if err != nil || got != filepath.Join(xdg, "missing", "agenthost") {
		t.Fatalf("XDG: %q, %v", got, err)
	}
	if fi, err := os.Stat(got); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("XDG folder: %v, %v", fi, err)
	}
	p.RuntimeDir = filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(p.RuntimeDir, 0o770); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p.RuntimeDir, 0o770)
	if got, err := p.EnsureRuntimeDirectory(); err != nil || got != p.RuntimeDir {
		t.Errorf("configured group-shared folder: %q, %v", got, err)
	}
	if os.Getuid() != 0 { // root may write anywhere
		if err := os.Chmod(p.RuntimeDir, 0o500); err != nil {
			t.Fatal(err)
		}
		if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("read-only folder: err = %v", err)
		}
	}
	p.RuntimeDir = want // the file made above
	if _, err := p.EnsureRuntimeDirectory(); err == nil {
		t.Errorf("configured path that is a file: no error")
	}
}

func TestEnvNotConfigKeys(t *testing.T) {
	clearEnv(t)
	// Documented variables that are read elsewhere load fine.
	t.Setenv("AGENTHOST_PLUGIN_LOG_LEVEL", "debug")
	t.Setenv("AGENTHOST_PLUGIN_DATA_DIR", "/var/lib/x")
	t.Setenv("AGENTHOST_AUDIO_VERBOSE", "1")
	t.Setenv("AGENTHOST_CONFIG", "/elsewhere.yaml")
	t.Setenv(proctree.EnvName, "1.2.3")          // an agenthost started by a plugin or an MCP server
	t.Setenv("AGENTHOST_PLUGINS_DEBOUNCE", "1s") // a real key beside them
	c := mustLoad(t, "", nil)
	if c.Plugins.Debounce.D() != time.Second || len(c.Warnings) != 0 {
		t.Errorf("debounce %v, warnings %q", c.Plugins.Debounce, c.Warnings)
	}
	// A typo is still an error, with a suggestion.
	t.Setenv("AGENTHOST_SERVER_ADRESS", "h:1")
	_, err := Load("", nil)
	ps := problems(t, err)
	if len(ps) != 1 || !strings.Contains(ps[0], "environment AGENTHOST_SERVER_ADRESS: no config key has this name; did you mean AGENTHOST_SERVER_ADDRESS?") {
		t.Errorf("problems = %q", ps)
	}
	// No config key may ever take one of these names.
	for name := range envVars() {
		if envIgnored(name) {
			t.Errorf("config key variable %s is in the ignored set", name)
		}
	}
}

func TestOpusRateAndFrame(t *testing.T) {
	clearEnv(t)
	for _, ok := range []string{
		"audio: {rate: 44100, frame: 30ms}\n", // PCM: anything positive
		"server: {params: {format: opus}}\naudio: {rate: 48000, frame: 20ms}\n",
		"server: {params: {input_audio_format: opus}}\naudio: {rate: 8000, frame: 2.5ms}\n",
		"server: {params: {format: opus, input_audio_format: opus}}\n", // the defaults, 16000 Hz and 60ms
	} {
		if _, err := Load(writeConfig(t, ok), nil); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, rate := range []int{8000, 12000, 16000, 24000, 48000} {
		for _, frame := range []string{"2.5ms", "5ms", "10ms", "20ms", "40ms", "60ms"} {
			ov := map[string]any{"server.params.format": "opus", "audio.rate": rate, "audio.frame": frame}
			if _, err := Load("", ov); err != nil {
				t.Errorf("opus %d Hz %s: %v", rate, frame, err)
			}
		}
	}

	_, err := Load(writeConfig(t, "server:\n  params: {format: opus}\naudio:\n  rate: 44100\n  frame: 30ms\n"), nil)
	ps := problems(t, err)
	want := [][]string{
		{":4: audio.rate: 44100 Hz is not a rate Opus supports (server.params.format is opus); use one of 8000, 12000, 16000, 24000, 48000"},
		{":5: audio.frame: 30ms is not a frame length Opus supports (server.params.format is opus); use one of 2.5ms, 5ms, 10ms, 20ms, 40ms, 60ms"},
	}
	if len(ps) != len(want) {
		t.Fatalf("problems = %q", ps)
	}
	for i, w := range want {
		if !strings.Contains(ps[i], w[0]) {
			t.Errorf("problem %d = %q, want %q", i, ps[i], w[0])
		}
	}
	// The microphone direction alone triggers it too; a non-positive value
	// gets only its usual error.
	_, err = Load("", map[string]any{"server.params.input_audio_format": "opus", "audio.rate": 0, "audio.frame": "15ms"})
	ps = problems(t, err)
	if len(ps) != 2 || !strings.Contains(ps[0]+ps[1], "audio.rate: 0 must be more than 0") ||
		!strings.Contains(ps[0]+ps[1], "audio.frame: 15ms is not a frame length Opus supports (server.params.input_audio_format is opus)") {
		t.Errorf("problems = %q", ps)
	}
}

func TestMCPServersAsDesktopClientsWriteThem(t *testing.T) {
	clearEnv(t)
	// Pasted from a desktop client: a timeout in seconds, another client's
	// own key (warned and ignored), and the old serve.enabled (obsolete).
	c := mustLoad(t, writeConfig(t, `mcpServers:
  fs: {"command": "npx", "args": ["-y", "x"], "timeout": 60, "autoApprove": []}
mcp:
  serve:
    enabled: true
`), nil)
	if fs := c.MCP.Servers["fs"]; fs.Timeout.D() != time.Minute || fs.Command != "npx" {
		t.Errorf("fs = %+v", fs)
	}
	want := []string{ // obsolete keys are found while reading, the rest after
		":5: mcp.serve.enabled: obsolete and ignored",
		":2: mcp.servers.fs.autoApprove: not a field agenthost uses",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings = %q", c.Warnings)
	}
	for i, w := range want {
		if !strings.Contains(c.Warnings[i], w) {
			t.Errorf("warning %d = %q, want %q", i, c.Warnings[i], w)
		}
	}
	if _, err := Load("", map[string]any{"mcp.serve.listen": "nohostport", "mcp.servers.x.command": "y", "mcp.servers.x.type": "carrier-pigeon"}); err == nil ||
		!strings.Contains(err.Error(), "mcp.serve.listen") || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("bad mcp settings: %v", err)
	}
}

func TestObsoleteVAD(t *testing.T) {
	clearEnv(t)
	// An old file with conversation.vad still loads, with a warning.
	c := mustLoad(t, writeConfig(t, "audio:\n  capture:\n    echo_cancel: true\nconversation:\n  aec: true\n  vad:\n    threshold: 500\n    hang: 700ms\n"), nil)
	if !c.Conversation.AEC {
		t.Errorf("the rest of conversation was lost")
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], ":6: conversation.vad: obsolete and ignored") {
		t.Errorf("warnings = %q", c.Warnings)
	}
	// Anything else under it is not checked (it is dropped as a whole).
	c = mustLoad(t, writeConfig(t, "conversation:\n  vad: {threshold: loud}\n"), nil)
	if len(c.Warnings) != 1 {
		t.Errorf("warnings = %q", c.Warnings)
	}
	// It is no key any more: from an override it is unknown.
	if _, err := Load("", map[string]any{"conversation.vad.threshold": "1"}); err == nil ||
		!strings.Contains(err.Error(), "override: conversation.vad.threshold: unknown key") {
		t.Errorf("override: err = %v", err)
	}
}

func TestServicePolicyPatternsAreChecked(t *testing.T) {
	_, err := Load("", map[string]any{"services.deny": "create_file,[oops"})
	if err == nil || !strings.Contains(err.Error(), "services.deny") || !strings.Contains(err.Error(), "[oops") {
		t.Fatalf("a malformed pattern: %v", err)
	}
	c, err := Load("", map[string]any{"services.allow": "get_*,list_*"})
	if err != nil || strings.Join(c.Services.Allow, " ") != "get_* list_*" {
		t.Fatalf("%v %v", c, err)
	}
}

func TestChangedNamesKeysNotValues(t *testing.T) {
	a, b := Default(), Default()
	b.Log.Level = "debug"
	b.Server.Token = "s3cret"
	b.Plugins.Config = map[string]any{"clock": map[string]any{"timezone": "Asia/Shanghai"}}
	b.Services.Deny = []string{"create_file"}
	got := strings.Join(Changed(a, b), " ")
	if got != "log.level plugins.config.clock.timezone server.token services.deny" {
		t.Fatalf("changed: %s", got)
	}
	if strings.Contains(got, "s3cret") {
		t.Fatal("a value in the list")
	}
	if c := Changed(a, Default()); len(c) != 0 {
		t.Fatalf("no change: %v", c)
	}
}

func TestTokenFromAMissingCredentialIsNone(t *testing.T) {
	c := Default()
	c.Server.TokenFile = "$CREDENTIALS_DIRECTORY/token"
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	if tok, err := c.Token(); tok != "" || err != nil {
		t.Fatalf("no credentials folder: %q %v", tok, err)
	}
	dir := t.TempDir()
	t.Setenv("CREDENTIALS_DIRECTORY", dir)
	if tok, err := c.Token(); tok != "" || err != nil {
		t.Fatalf("no token in it: %q %v", tok, err)
	}
	os.WriteFile(filepath.Join(dir, "token"), []byte(" tok\n"), 0o600)
	if tok, err := c.Token(); tok != "tok" || err != nil {
		t.Fatalf("a token: %q %v", tok, err)
	}
	c.Server.TokenFile = filepath.Join(dir, "missing")
	if _, err := c.Token(); err == nil {
		t.Fatal("a missing token file that is not a credential must be an error")
	}
}

// TestLivenessBounds: server.liveness takes sensible bounds and says which
// one is wrong and what to write.
func TestLivenessBounds(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]any
		want string // "" = accepted
	}{
		{map[string]any{"server.liveness.answer_timeout": "2s", "server.liveness.tcp_user_timeout": "0s", "server.liveness.tcp_keepalive": "0s"}, ""},
		{map[string]any{"server.liveness.answer_timeout": "0s"}, "server.liveness.answer_timeout"},
		{map[string]any{"server.liveness.answer_timeout": "5m"}, "not shorter than server.keepalive"},
		{map[string]any{"server.liveness.tcp_user_timeout": "-1s"}, "server.liveness.tcp_user_timeout"},
		{map[string]any{"server.liveness.tcp_user_timeout": "2h"}, "server.liveness.tcp_user_timeout"},
		{map[string]any{"server.liveness.tcp_keepalive": "1s"}, "from 3s to 1h"},
	} {
		c, err := Load("", tc.set)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.set, err)
		case tc.want == "" && c.Server.Liveness.AnswerTimeout.D() != 2*time.Second:
			t.Errorf("%v: %+v", tc.set, c.Server.Liveness)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: want an error naming %q, got %v", tc.set, tc.want, err)
		}
	}
	if d := Default(); d.Server.Liveness.AnswerTimeout.D() > 5*time.Second || d.Conversation.Earcons.Unreachable != EarconBuiltin {
		t.Errorf("defaults: %+v, earcon %q", d.Server.Liveness, d.Conversation.Earcons.Unreachable)
	}
}

// TestAConfiguredRuntimeFolderOfAnotherUserIsRefused: plugins.runtime_dir
// (or $RUNTIME_DIRECTORY) that another user owns, or that any user may
// write to, is refused as the built-in fallback is: its owner could move
// the daemon's sockets aside and listen in their place. As root, with a
// folder owned by nobody (65534).
func TestAConfiguredRuntimeFolderOfAnotherUserIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give a folder to another user")
	}
	runtimeEnv(t)
	p := Default().Plugins
	p.RuntimeDir = filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(p.RuntimeDir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p.RuntimeDir, 0o777)
	if err := os.Chown(p.RuntimeDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), p.RuntimeDir) {
		t.Errorf("configured folder of nobody, mode 0777: err = %v", err)
	}
	os.Chmod(p.RuntimeDir, 0o700)
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "belongs to user id 65534") {
		t.Errorf("configured folder of nobody, mode 0700: err = %v", err)
	}
	os.Chown(p.RuntimeDir, 0, 0)
	os.Chmod(p.RuntimeDir, 0o777)
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "0777") {
		t.Errorf("configured folder of ours that anyone may write to: err = %v", err)
	}
	t.Setenv("RUNTIME_DIRECTORY", p.RuntimeDir)
	p.RuntimeDir = ""
	if _, err := p.EnsureRuntimeDirectory(); err == nil || !strings.Contains(err.Error(), "0777") {
		t.Errorf("$RUNTIME_DIRECTORY that anyone may write to: err = %v", err)
	}
}

// TestTheTestSuitesSwitchIsNoConfigKey: scripts/test.sh sets
// AGENTHOST_LONG_TESTS for the long test material; every daemon a test
// starts inherits it and must not take it for a misspelt setting.
func TestTheTestSuitesSwitchIsNoConfigKey(t *testing.T) {
	t.Setenv("AGENTHOST_LONG_TESTS", "1")
	if _, err := Load("", nil); err != nil {
		t.Fatalf("Load with AGENTHOST_LONG_TESTS set: %v", err)
	}
}
