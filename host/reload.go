package host

import (
	"log/slog"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/part"
)

// liveKeys are the settings a reload applies without a restart (a key
// counts when it is one of these or below one).
var liveKeys = []string{
	"log.level",
	"server",
	"services",
	"plugins.config", "plugins.sha256",
	"conversation.hooks",
	"conversation.wake_word.models", "conversation.wake_word.threshold", "conversation.wake_word.dir", "conversation.wake_word.onnxruntime",
	"mcp.servers", "mcp.servers_file",
	"audio.input", "audio.output", "audio.input_file", "audio.output_file", "audio.retry", "audio.pace",
	"audio.capture", "audio.echo_room",
}

func isLive(key string) bool {
	for _, k := range liveKeys {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
}

// touched reports whether any changed key is prefix or below it.
func touched(changed []string, prefixes ...string) bool {
	for _, key := range changed {
		for _, p := range prefixes {
			if key == p || strings.HasPrefix(key, p+".") {
				return true
			}
		}
	}
	return false
}

// SetLogLevel gives the host the level of its logger, which a reload sets.
func (h *Host) SetLogLevel(lv *slog.LevelVar) { h.level = lv }

// Apply makes a newly loaded (and so validated) configuration the running
// one, a reload: the log level, services (deadlines, limits, prefixes,
// policy, built-ins), plugin settings, MCP servers (mcp.servers and the
// content of mcp.servers_file, read again), hooks and audio devices change
// at once; a change of the server, its token or the AUTH parameters makes
// the link reconnect, once; every other changed setting is named in the log
// as waiting for a restart. Every provider whose inputs changed (its config,
// its pin, its prefix) is looked at again, and one that could not run is
// tried again. It returns the changed keys that need a restart.
func (h *Host) Apply(next *config.Config) []string {
	h.mu.Lock()
	prev := h.cfg
	h.mu.Unlock()
	changed := part.Changes(config.Changed(prev, next))
	if more := h.mcpSet.Diff(next); !changed.Touched(more...) {
		changed = append(changed, more...)
	}
	if len(changed) == 0 {
		h.log.Info("configuration reloaded: nothing changed")
		h.applyWakeWord(prev, next, nil) // a detector that could not run is tried again
		return nil
	}
	var live, later []string
	for _, key := range changed {
		if isLive(key) {
			live = append(live, key)
		} else {
			later = append(later, key)
		}
	}
	if touched(changed, "log.level") && h.level != nil {
		h.level.UnmarshalText([]byte(next.Log.Level))
	}
	h.mcpSet.Reload(prev, next, changed)
	mcpTouched := touched(changed, "mcp.servers", "mcp.servers_file")
	prefixChanged := h.mcpSet.PrefixChanged
	if touched(changed, "services") || mcpTouched {
		h.calls.Reload(prev, next, changed)
		h.speaker.Reload(prev, next, changed)
	}
	if touched(changed, "plugins.config", "plugins.sha256", "services.prefixes") && h.plugins != nil {
		h.plugins.Reconfigure(next.Plugins, prefixChanged)
	}
	if h.conv != nil {
		if touched(changed, "conversation.hooks") {
			h.conv.SetHooks(next.Conversation.Hooks)
		}
		if touched(changed, "audio.input", "audio.output", "audio.input_file", "audio.output_file", "audio.retry", "audio.pace", "audio.capture", "audio.echo_room") {
			h.conv.SetDevices(h.speaker.AudioDevices(next.Audio))
		}
	}
	h.applyWakeWord(prev, next, changed)
	h.mu.Lock()
	h.cfg = next
	h.mu.Unlock()
	if h.mcpSrv != nil {
		h.mcpSrv.Reload(prev, next, changed)
	}
	if touched(changed, "server") && h.link.Update(link.Options{Server: next.Server, Token: next.Token, Log: h.log}) {
		h.log.Info("the server settings changed; reconnecting once")
	}
	h.log.Info("configuration reloaded", "applied", strings.Join(live, ", "))
	if len(later) > 0 {
		h.log.Warn("these settings changed but apply only after a restart (systemctl restart agenthost)", "settings", strings.Join(later, ", "))
	}
	return later
}
