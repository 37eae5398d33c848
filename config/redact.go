package config

import (
	"bytes"
	"regexp"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/internal/urlmask"
)

// Mask replaces a secret value in Redacted output.
const Mask = urlmask.Mask

// secretName matches keys of free-form subtrees (plugins.config, MCP server
// extras) whose values are treated as secrets in Redacted output.
var secretName = regexp.MustCompile(`(?i)(token|secret|passw(or)?d|api[_-]?key|authorization|credential|private[_-]?key|cookie)`)

// Redacted returns the effective settings as YAML, with secrets masked: the
// token, MCP server header and env values, an MCP server URL's secrets
// (urlmask: password, query values, fragment), and free-form values whose key looks secret (token, password, api_key, ...).
// The output loads back as the same configuration, except for masked values.
func (c *Config) Redacted() string {
	r := *c
	if r.Server.Token != "" {
		r.Server.Token = Mask
	}
	if r.MCP.Serve.Token != "" {
		r.MCP.Serve.Token = Mask
	}
	r.Plugins.Config, _ = maskAny(c.Plugins.Config).(map[string]any)
	r.MCP.Servers = make(map[string]MCPServer, len(c.MCP.Servers))
	for n, s := range c.MCP.Servers {
		s.Headers = maskValues(s.Headers)
		s.Env = maskValues(s.Env)
		if s.URL != "" {
			s.URL = urlmask.String(s.URL)
		}
		if s.Extra != nil {
			s.Extra, _ = maskAny(s.Extra).(map[string]any)
		}
		r.MCP.Servers[n] = s
	}
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&r); err != nil {
		return "# cannot render the configuration: " + err.Error() + "\n"
	}
	_ = enc.Close()
	return b.String()
}

func maskValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = Mask
	}
	return out
}

// maskAny copies a free-form value, masking values under secret-looking keys.
func maskAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if secretName.MatchString(k) && e != nil && e != "" {
				out[k] = Mask
			} else {
				out[k] = maskAny(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskAny(e)
		}
		return out
	}
	return v
}
