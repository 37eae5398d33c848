package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/urlmask"
)

// ServerConfig is one MCP server, in the shape of a desktop MCP client's
// `mcpServers` entry: `command`/`args`/`env`/`cwd` for a stdio server, or
// `url`/`headers` for an HTTP one (Streamable HTTP, falling back to the
// legacy SSE transport), plus agenthost's own keys.
type ServerConfig struct {
	// Type is "stdio", "http" (also "streamable-http", "streamableHttp") or
	// "sse"; empty means stdio when Command is set and http (with the SSE
	// fallback) when URL is set.
	Type    string            `json:"type,omitempty" yaml:"type,omitempty"`
	Command string            `json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string          `json:"args,omitempty" yaml:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty" yaml:"cwd,omitempty"`
	URL     string            `json:"url,omitempty" yaml:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Disabled servers are not started.
	Disabled bool `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	// Timeout is the deadline of a call to one of this server's tools
	// (the dispatcher's default when zero). A number is seconds, as desktop
	// clients write it; a string is a Go duration ("30s").
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// AllowedTools, when not empty, are the only tools registered; names or
	// path.Match patterns ("get_*").
	AllowedTools []string `json:"allowed_tools,omitempty" yaml:"allowed_tools,omitempty"`
	// ExcludedTools are never registered; names or patterns.
	ExcludedTools []string `json:"excluded_tools,omitempty" yaml:"excluded_tools,omitempty"`
	// Prefix goes before every tool name in the register; the registry
	// applies it (services.RegistryOptions.Prefixes["mcp:<name>"]), the
	// session uses it only to check that prefixed names stay valid.
	Prefix string `json:"prefix,omitempty" yaml:"prefix,omitempty"`
	// Roots are the folders (paths) or URIs answered to roots/list. None by
	// default: see Roots in session.go.
	Roots []string `json:"roots,omitempty" yaml:"roots,omitempty"`
	// Sandbox grants a stdio server folders to read or write beyond its own.
	Sandbox Grant `json:"sandbox,omitempty" yaml:"sandbox,omitempty"`
}

// Grant is what the owner lets a stdio server reach beyond its own folder.
type Grant struct {
	Read  []string `json:"read,omitempty" yaml:"read,omitempty"`
	Write []string `json:"write,omitempty" yaml:"write,omitempty"`
}

// Transport names, as Info and Status report them.
const (
	TransportStdio      = "stdio"
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// transport returns the transport the config asks for: stdio,
// streamable-http (which falls back to sse) or sse.
func (c ServerConfig) transport() (string, error) {
	switch strings.ToLower(c.Type) {
	case "":
		switch {
		case c.Command != "" && c.URL != "":
			return "", errors.New("both command and url are set; a server is either a program (command) or an address (url)")
		case c.Command != "":
			return TransportStdio, nil
		case c.URL != "":
			return TransportStreamable, nil
		}
		return "", errors.New("neither command (a program to run) nor url (an HTTP address) is set")
	case "stdio":
		if c.Command == "" {
			return "", errors.New(`type is "stdio" but command is empty`)
		}
		return TransportStdio, nil
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		if c.URL == "" {
			return "", fmt.Errorf("type is %q but url is empty", c.Type)
		}
		return TransportStreamable, nil
	case "sse":
		if c.URL == "" {
			return "", errors.New(`type is "sse" but url is empty`)
		}
		return TransportSSE, nil
	}
	return "", fmt.Errorf("type %q is not one of stdio, http, sse", c.Type)
}

// Validate says what is wrong with the config, or returns nil.
func (c ServerConfig) Validate() error {
	_, err := c.transport()
	return err
}

// ProviderID is the registry ID of the server named name: "mcp:<name>".
func ProviderID(name string) string { return "mcp:" + name }

// Duration is a time.Duration that reads a JSON/YAML number as seconds and
// a string as a Go duration ("1m30s") or a number of seconds ("30").
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d *Duration) parse(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		*d = 0
		return nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return d.seconds(f)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("timeout %q is neither a number of seconds nor a duration like \"30s\"", s)
	}
	if v < 0 {
		return fmt.Errorf("timeout %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

func (d *Duration) seconds(f float64) error {
	if f < 0 || f > 1e9 {
		return fmt.Errorf("timeout %v seconds is out of range", f)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// UnmarshalJSON accepts 30, 2.5 and "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*d = 0
		return nil
	case float64:
		return d.seconds(v)
	case string:
		return d.parse(v)
	}
	return fmt.Errorf("timeout must be a number of seconds or a string like \"30s\", not %s", bytes.TrimSpace(b))
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalText accepts "30s" and "30" (YAML and koanf go through it).
func (d *Duration) UnmarshalText(b []byte) error { return d.parse(string(b)) }

// MarshalText writes a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// knownKeys are the keys of an mcpServers entry that ServerConfig reads;
// the aliases map camelCase spellings other clients use to ours.
var (
	knownKeys = map[string]bool{"type": true, "command": true, "args": true, "env": true, "cwd": true, "url": true,
		"headers": true, "disabled": true, "timeout": true, "allowed_tools": true, "excluded_tools": true, "prefix": true, "roots": true}
	keyAliases = map[string]string{"allowedTools": "allowed_tools", "excludedTools": "excluded_tools", "transport": "type", "serverUrl": "url"}
)

// ParseServersJSON reads a desktop MCP client's configuration file (an
// object with an "mcpServers" object, or that object alone) into configs
// keyed by server name. Keys it does not know (autoApprove, alwaysAllow, …)
// are ignored, each with a warning. ${VAR} and ${VAR:-default} are expanded
// from the environment in every string; an unset variable without a default
// is a warning and expands to "". Warnings name the server and the key.
func ParseServersJSON(data []byte) (map[string]ServerConfig, []string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	var warnings []string
	raw, ok := top["mcpServers"]
	if !ok {
		raw, ok = top["servers"] // VS Code's mcp.json
	}
	if ok {
		for k := range top {
			if k != "mcpServers" && k != "servers" {
				warnings = append(warnings, fmt.Sprintf("key %q is not used (only mcpServers is read)", k))
			}
		}
	} else {
		raw = data
	}
	var entries map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, fmt.Errorf("mcpServers must map server names to objects: %w", err)
	}
	names := slices.Sorted(maps.Keys(entries))
	out := make(map[string]ServerConfig, len(entries))
	for _, name := range names {
		entry := entries[name]
		if err := checkServerName(name); err != nil {
			return nil, warnings, err
		}
		known := make(map[string]json.RawMessage, len(entry))
		keys := slices.Sorted(maps.Keys(entry))
		for _, k := range keys {
			key := k
			if a, ok := keyAliases[k]; ok {
				key = a
			}
			if !knownKeys[key] {
				warnings = append(warnings, fmt.Sprintf("mcpServers.%s: key %q is not used by agenthost and is ignored", name, k))
				continue
			}
			known[key] = entry[k]
		}
		b, _ := json.Marshal(known)
		var c ServerConfig
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, warnings, fmt.Errorf("mcpServers.%s: %w", name, err)
		}
		warnings = append(warnings, c.expand(name)...)
		if !c.Disabled {
			if err := c.Validate(); err != nil {
				return nil, warnings, fmt.Errorf("mcpServers.%s: %w", name, err)
			}
		}
		out[name] = c
	}
	return out, warnings, nil
}

// LoadServersFile reads ParseServersJSON's format from a file.
func LoadServersFile(path string) (map[string]ServerConfig, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	servers, warnings, err := ParseServersJSON(data)
	if err != nil {
		return nil, warnings, fmt.Errorf("%s: %w", path, err)
	}
	return servers, warnings, nil
}

var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func checkServerName(name string) error {
	if !serverNamePattern.MatchString(name) {
		return fmt.Errorf("mcpServers: server name %q must be 1 to 64 letters, digits, '_', '.' or '-'", name)
	}
	return nil
}

// Expand returns c with ${VAR} and ${VAR:-default} expanded from the
// environment in every string field, and warnings for unset variables.
func (c ServerConfig) Expand(name string) (ServerConfig, []string) {
	w := c.expand(name)
	return c, w
}

// expand expands c in place.
func (c *ServerConfig) expand(name string) []string {
	var warnings []string
	ex := func(key, s string) string {
		v, missing := ExpandEnv(s)
		for _, m := range missing {
			warnings = append(warnings, fmt.Sprintf("mcpServers.%s.%s: environment variable %s is not set (write ${%s:-default} for a default)", name, key, m, m))
		}
		return v
	}
	c.Type = ex("type", c.Type)
	c.Command = ex("command", c.Command)
	c.Cwd = ex("cwd", c.Cwd)
	c.URL = ex("url", c.URL)
	c.Prefix = ex("prefix", c.Prefix)
	exList := func(key string, l []string) []string {
		if l == nil {
			return nil
		}
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = ex(fmt.Sprintf("%s[%d]", key, i), s)
		}
		return out
	}
	exMap := func(key string, m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = ex(key+"."+k, v)
		}
		return out
	}
	c.Args = exList("args", c.Args)
	c.AllowedTools = exList("allowed_tools", c.AllowedTools)
	c.ExcludedTools = exList("excluded_tools", c.ExcludedTools)
	c.Roots = exList("roots", c.Roots)
	c.Env = exMap("env", c.Env)
	c.Headers = exMap("headers", c.Headers)
	sort.Strings(warnings)
	return warnings
}

var varPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// ExpandEnv replaces ${VAR} and ${VAR:-default} in s; a bare $VAR is left
// as it is (a password may contain '$'). It returns the names of unset
// variables that had no default. ${VAR:-default} takes the default when VAR
// is unset or empty, as in a shell.
func ExpandEnv(s string) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var missing []string
	out := varPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := varPattern.FindStringSubmatch(m)
		v, ok := os.LookupEnv(sub[1])
		if sub[2] != "" {
			if !ok || v == "" {
				return sub[3]
			}
			return v
		}
		if !ok {
			missing = append(missing, sub[1])
		}
		return v
	})
	return out, missing
}

// Redacted returns a copy of c that can be shown: the values of env and
// headers masked (they carry API keys and tokens), and so are the URL's
// secrets (urlmask).
func (c ServerConfig) Redacted() ServerConfig {
	mask := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			if v == "" {
				out[k] = ""
			} else {
				out[k] = "***"
			}
		}
		return out
	}
	c.Env = mask(c.Env)
	c.Headers = mask(c.Headers)
	c.URL = urlmask.String(c.URL)
	return c
}
