// Package preflight is what the daemon looks at before it starts: the
// files, folders, commands, tokens, sounds, plugins and sandbox its
// configuration names, and, as root, whom the wake-word detector would run
// as. `agenthost run` logs what it finds and refuses to
// start on a fatal finding; `agenthost check` prints the same findings.
// Both call Run, so that check cannot say OK to what run refuses.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/pluginmgr"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
	"github.com/agenthost/agenthost/internal/sandbox"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// Finding is one thing the start would say about the configuration.
type Finding struct {
	// Fatal: a configuration error; run refuses to start (exit 78).
	Fatal bool
	// Level is how run logs a finding that is not fatal (Info, Warn, Error).
	Level slog.Level
	Msg   string
}

func fatal(format string, a ...any) Finding {
	return Finding{Fatal: true, Level: slog.LevelError, Msg: fmt.Sprintf(format, a...)}
}

func warn(format string, a ...any) Finding {
	return Finding{Level: slog.LevelWarn, Msg: fmt.Sprintf(format, a...)}
}

// Fatal reports whether any finding is fatal.
func Fatal(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Fatal })
}

// Run looks at everything cfg names that the start needs, in the order the
// start needs it. It reaches no network: the voice server is check's own
// (link.Probe). With tryPlugins (check's), plugins that plugins.config
// configures are started in their sandbox and handed their settings, as the
// daemon does, then stopped; the daemon's start does not start them twice:
// its plugin manager reports a rejection and serves the rest.
func Run(ctx context.Context, cfg *config.Config, tryPlugins bool) []Finding {
	var out []Finding
	out = append(out, folders(cfg)...)
	out = append(out, tokens(cfg)...)
	out = append(out, sounds(cfg)...)
	out = append(out, mcpServers(cfg)...)
	box := Sandbox(cfg)
	out = append(out, box)
	out = append(out, wakeWord(cfg)...)
	out = append(out, householdKey(cfg)...)
	if tryPlugins {
		out = append(out, plugins(ctx, cfg, box.Level < slog.LevelError)...)
	}
	return out
}

// folders: the state folder (run refuses one others may write) and the
// plugin folders (run starts without one that is missing).
func folders(cfg *config.Config) []Finding {
	var out []Finding
	if err := cfg.Plugins.CheckStateDirectory(); err != nil {
		out = append(out, fatal("%v", err))
	}
	for _, dir := range cfg.Plugins.Dirs {
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			out = append(out, warn("plugins.dirs: %s: %s; no plugin is started from it, and one put there later needs a restart", dir, reason(err)))
		case !fi.IsDir():
			out = append(out, warn("plugins.dirs: %s is not a folder; no plugin is started from it", dir))
		}
	}
	return out
}

// tokens: a token file that cannot be read is refused; no token at all is
// said, since a server that needs one refuses the connection.
func tokens(cfg *config.Config) []Finding {
	var out []Finding
	tok, err := cfg.Token()
	switch {
	case err != nil:
		out = append(out, fatal("%s; put the server token in it, or leave server.token_file empty", clean(err)))
	case tok == "":
		out = append(out, warn("no token is configured; a server that needs one will refuse the connection (set server.token_file, install the systemd credential agenthost.token, or set AGENTHOST_SERVER_TOKEN)"))
	}
	if cfg.MCP.Serve.Listen != "" {
		if _, err := cfg.MCP.Serve.BearerToken(); err != nil {
			out = append(out, fatal("%s", clean(err)))
		}
	}
	return out
}

// sounds: the microphone's file and every sound file the speaker plays,
// read as the daemon reads them.
func sounds(cfg *config.Config) []Finding {
	var out []Finding
	rate := cfg.Audio.Rate
	if cfg.Audio.Backend == "file" && cfg.Audio.InputFile != "" {
		if f := soundFile("audio.input_file", cfg.Audio.InputFile, rate, 0, "give a WAV or raw 16-bit file"); f != nil {
			out = append(out, *f)
		}
	}
	e := cfg.Conversation.Earcons
	for _, s := range []struct{ key, path string }{
		{"conversation.earcons.listen_start", e.ListenStart}, {"conversation.earcons.listen_end", e.ListenEnd},
		{"conversation.earcons.wake", e.Wake}, {"conversation.earcons.unreachable", e.Unreachable},
	} {
		if s.path == "" || s.path == config.EarconBuiltin {
			continue
		}
		if f := soundFile(s.key, s.path, rate, 10*time.Second, `an earcon is a short WAV file; "" plays none`); f != nil {
			out = append(out, *f)
		}
	}
	if p := cfg.Device.Ring.Sound; p != "" {
		if f := soundFile("device.ring.sound", p, rate, 30*time.Second, `give a WAV file, or "" for the built-in chime`); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

// soundFile reads a sound file as the daemon does (limit 0: only its
// header); nil when it can be played.
func soundFile(key, path string, rate int, limit time.Duration, hint string) *Finding {
	fi, err := os.Stat(path)
	if err != nil {
		f := fatal("%s: %s: %s; %s", key, path, reason(err), hint)
		return &f
	}
	if !fi.Mode().IsRegular() {
		return nil // a pipe or a device: opening it here could wait for a writer
	}
	if limit == 0 {
		var src *audio.FileSource
		if src, err = audio.OpenFileSource(path, audio.Options{Rate: rate}); err == nil {
			src.Close()
		}
	} else {
		var pcm []int16
		if pcm, err = audio.LoadFile(path, rate, limit); err == nil && len(pcm) == 0 {
			err = fmt.Errorf("%s holds no sound", path)
		}
	}
	if err != nil {
		f := fatal("%s: %s; %s", key, strings.TrimPrefix(err.Error(), "audio: "), hint)
		return &f
	}
	return nil
}

// mcpServers: mcp.servers_file must be there (run refuses one that is
// not); a stdio server whose command is not there is said (the daemon
// serves without it, retrying it).
func mcpServers(cfg *config.Config) []Finding {
	servers, warnings, err := mcpservers.Read(cfg)
	var out []Finding
	if err != nil {
		out = append(out, fatal("%s; fix the path, or leave mcp.servers_file empty", clean(err)))
	}
	for _, w := range warnings {
		out = append(out, warn("%s", w))
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := servers[n]
		if s.Disabled || s.Command == "" {
			continue
		}
		if _, err := exec.LookPath(s.Command); err != nil {
			out = append(out, warn("mcp server %s: its command %s: %s; install it, fix the command, or set disabled: true (the daemon starts without this server and tries it again)", n, s.Command, reason(err)))
		}
		if s.Cwd != "" {
			if fi, err := os.Stat(s.Cwd); err != nil || !fi.IsDir() {
				out = append(out, warn("mcp server %s: its folder (cwd) %s is not a folder it can start in", n, s.Cwd))
			}
		}
	}
	return out
}

// Sandbox is how the daemon's children will run: Info when confined, Warn
// when the owner turned the sandbox off, Error when the kernel cannot
// confine them (then none is started, and the daemon runs without them).
func Sandbox(cfg *config.Config) Finding {
	mode := sandbox.Mode(cfg.Sandbox.Mode)
	mech, err := sandbox.Mechanism(mode)
	switch {
	case err != nil:
		return Finding{Level: slog.LevelError, Msg: "no plugin, MCP stdio server, hook or wake-word detector will be started: " + err.Error()}
	case mech == sandbox.None:
		return warn("sandbox.mode is none: plugins, MCP servers, hooks and the wake-word detector run with the daemon's own rights (docs/security.md)")
	case mech == sandbox.Namespaces:
		why := ""
		if _, lerr := sandbox.ABI(); lerr != nil {
			why = ": Landlock is not available here"
		}
		return Finding{Level: slog.LevelInfo, Msg: fmt.Sprintf("children run in the sandbox (sandbox.mode %s: user namespaces through bubblewrap%s)", mode, why)}
	}
	abi, _ := sandbox.ABI()
	return Finding{Level: slog.LevelInfo, Msg: fmt.Sprintf("children run in the sandbox (sandbox.mode %s, Landlock ABI %d)", mode, abi)}
}

// wakeWord: as root, the detector runs as the one user who owns its files
// (wakeword.Owner); files of two users keep it from starting, and the
// daemon goes on without it.
func wakeWord(cfg *config.Config) []Finding {
	w := cfg.Conversation.WakeWord
	if os.Geteuid() != 0 || !w.On() || cfg.Audio.Backend == "none" {
		return nil
	}
	verifiers := filepath.Join(cfg.Plugins.StateDirectory(), hostwake.VerifierFolder)
	if _, _, err := wakeword.Owner(w.Dir, w.ONNXRuntime, w.Models, verifiers); err != nil {
		return []Finding{{Level: slog.LevelError, Msg: "the wake-word detector will not start: " + err.Error()}}
	}
	return nil
}

// plugins: each plugin that plugins.config configures is started and
// handed its settings; one that rejects them is a configuration error.
// confined says the sandbox can start them.
func plugins(ctx context.Context, cfg *config.Config, confined bool) []Finding {
	names := make([]string, 0, len(cfg.Plugins.Config))
	for n := range cfg.Plugins.Config {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Finding
	for _, name := range names {
		path := pluginmgr.Find(cfg.Plugins.Dirs, name)
		switch {
		case path == "":
			out = append(out, warn("plugins.config.%s: no plugin %s in plugins.dirs (%s); these settings are used by none", name, name, strings.Join(cfg.Plugins.Dirs, ", ")))
			continue
		case !confined:
			continue // the sandbox's finding says why it cannot start
		}
		if err := try(ctx, cfg, name, path); err != nil {
			var rejected *pluginv1.ConfigError
			if errors.As(err, &rejected) {
				out = append(out, fatal("plugins.config.%s: the plugin %s rejects it: %s", name, path, rejected.Message))
			} else {
				out = append(out, Finding{Level: slog.LevelError, Msg: fmt.Sprintf("plugin %s cannot run: %v", name, err)})
			}
		}
	}
	return out
}

// try starts one plugin as the daemon would, with its sockets and data in
// a scratch folder, and stops it.
func try(ctx context.Context, cfg *config.Config, name, path string) error {
	dir, err := os.MkdirTemp("", "agenthost-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, cfg.Plugins.StartTimeout.D())
	defer cancel()
	return pluginmgr.Try(ctx, pluginmgr.Options{Plugins: cfg.Plugins, RuntimeDir: dir, Jail: cfg.Jail()}, name, path)
}

// reason is what an error of the file system says, without the path the
// message already names.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	return err.Error()
}

// clean turns "key: open PATH: why" into "key: PATH: why".
func clean(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		key, _, _ := strings.Cut(err.Error(), ": ")
		return fmt.Sprintf("%s: %s: %s", key, filepath.Clean(pe.Path), pe.Err)
	}
	return err.Error()
}
