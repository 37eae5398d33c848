package config

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// Sandbox configures how the daemon confines what it starts: plugins, MCP
// stdio servers, event hooks, the wake-word detector.
type Sandbox struct {
	// Mode is auto (the default: every child is confined, with Landlock
	// where the kernel has it, else in user namespaces through bubblewrap,
	// and none is started where neither can), landlock or namespaces (that
	// mechanism only) or none (children run with the daemon's own rights).
	Mode string `yaml:"mode"`
}

// SandboxModes are the values of sandbox.mode.
var SandboxModes = func() []string {
	var out []string
	for _, m := range sandbox.Modes {
		out = append(out, string(m))
	}
	return out
}()

// Jail is the sandbox every child of the daemon runs in: the daemon's own
// files (its state, runtime folder, configuration, tokens, credentials and
// wake-word models) are hidden from it.
func (c *Config) Jail() sandbox.Jail {
	hide := []string{c.Path, c.Plugins.StateDirectory(), c.Plugins.RuntimeDirectory(),
		filepath.Dir(c.ControlSocketPath()), c.Conversation.WakeWord.Dir, c.MCP.ServersFile}
	for _, f := range []string{c.Server.TokenFile, c.MCP.Serve.TokenFile} {
		if f != "" {
			hide = append(hide, os.ExpandEnv(f))
		}
	}
	// What systemd hands the service (a credential, its folders).
	for _, env := range []string{"CREDENTIALS_DIRECTORY", "STATE_DIRECTORY", "CACHE_DIRECTORY", "RUNTIME_DIRECTORY", "CONFIGURATION_DIRECTORY", "LOGS_DIRECTORY"} {
		hide = append(hide, strings.Split(os.Getenv(env), ":")...)
	}
	var kept []string
	for _, h := range hide {
		if strings.TrimSpace(h) != "" {
			kept = append(kept, h)
		}
	}
	return sandbox.Jail{Mode: sandbox.Mode(c.Sandbox.Mode), Base: sandbox.Policy{Hide: kept}}
}

// Grant is what the owner lets one plugin or MCP server reach beyond its
// own folders: more to read (inside the daemon's hidden ones) and folders
// to write.
type Grant struct {
	Read  []string `yaml:"read,omitempty"`
	Write []string `yaml:"write,omitempty"`
}

// Policy is the grant as a sandbox policy.
func (g Grant) Policy() sandbox.Policy { return sandbox.Policy{Read: g.Read, Write: g.Write} }

// checkGrant refuses a grant that is not absolute or that reaches into the
// daemon's own files, which no child may have.
func (c *Config) checkGrant(l *loader, key string, g Grant) {
	own := c.Jail().Base.Hide
	own = append(own, sandbox.Defaults...)
	for kind, list := range map[string][]string{"read": g.Read, "write": g.Write} {
		for _, p := range list {
			if !filepath.IsAbs(p) {
				l.errorf(path(key+"."+kind), "%q is not an absolute path", p)
				continue
			}
			clean := filepath.Clean(p)
			for _, o := range own {
				o = filepath.Clean(o)
				if kind == "write" && within(o, clean) || within(clean, o) {
					l.errorf(path(key+"."+kind), "%s reaches the daemon's own files (%s), which no plugin or MCP server may have; grant a folder outside them", p, o)
					break
				}
			}
		}
	}
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
