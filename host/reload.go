package host

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/pluginmgr"
)

// isLive reports whether a part applies key without a restart (part.Live).
func (h *Host) isLive(key string) bool {
	for _, r := range h.reload {
		if l, ok := r.(part.Live); ok && (part.Changes{key}).Touched(l.Live()...) {
			return true
		}
	}
	return false
}

// Apply makes a newly loaded (and so validated) configuration the running
// one, a reload: the configuration is diffed once (config.Changed, and the
// content of mcp.servers_file read again) and each part takes its slice, in
// the composition's order (Host.reload): the log level, services
// (deadlines, limits, prefixes, policy, built-ins), plugin settings, MCP
// servers, hooks and audio devices change at once; a change of the server,
// its token or the AUTH parameters makes the link reconnect, once; every
// other changed setting is named in the log as waiting for a restart.
// Every provider whose inputs changed (its config, its pin, its prefix) is
// looked at again, and one that could not run is tried again. It returns
// the changed keys that need a restart.
func (h *Host) Apply(next *config.Config) []string {
	prev := h.Config()
	changed := part.Changes(config.Changed(prev, next))
	for _, r := range h.reload {
		if d, ok := r.(part.Differ); ok {
			if more := d.Diff(next); !changed.Touched(more...) {
				changed = append(changed, more...)
			}
		}
	}
	if len(changed) == 0 {
		h.log.Info("configuration reloaded: nothing changed")
		for _, r := range h.reload {
			r.Reload(prev, next, nil) // a part that could not run is tried again
		}
		return nil
	}
	var waiting part.Changes
	for _, r := range h.reload {
		if w, ok := r.(part.Waiting); ok {
			waiting = append(waiting, w.Waiting(prev, next, changed)...)
		}
	}
	var live, later []string
	for _, key := range changed {
		if h.isLive(key) && !slices.Contains(waiting, key) {
			live = append(live, key)
		} else {
			later = append(later, key)
		}
	}
	for _, r := range h.reload {
		r.Reload(prev, next, changed)
	}
	h.cfg.Store(next)
	h.log.Info("configuration reloaded", "applied", strings.Join(live, ", "))
	if len(later) > 0 {
		h.log.Warn("these settings changed but apply only after a restart (systemctl restart agenthost)", "settings", strings.Join(later, ", "))
	}
	return later
}

// logLevel sets the logger's level (log.level).
func logLevel(lv *slog.LevelVar) part.Reloader {
	return part.Settings{Keys: []string{"log.level"}, Apply: func(_, next *config.Config, changed part.Changes) {
		if changed.Touched("log.level") && lv != nil {
			lv.UnmarshalText([]byte(next.Log.Level))
		}
	}}
}

// pluginSettings gives the plugins their settings, pins, sound policy
// (plugins.audio, for the next stream) and network list (plugins.network,
// for the next call), and looks again at those whose
// services prefix the MCP set says changed.
func pluginSettings(m *pluginmgr.Manager, set *mcpservers.Set) part.Reloader {
	return part.Settings{Keys: []string{"plugins.config", "plugins.sha256", "plugins.audio", "plugins.sandbox", "plugins.network"}, Apply: func(_, next *config.Config, changed part.Changes) {
		if changed.Touched("plugins.config", "plugins.sha256", "plugins.audio", "plugins.sandbox", "plugins.network", "services.prefixes") {
			m.Reconfigure(next.Plugins, set.PrefixChanged)
		}
	}}
}

// serverSettings makes the link reconnect, once, when the server, its
// token or the AUTH parameters changed.
func serverSettings(l *link.Link, log *slog.Logger) part.Reloader {
	return part.Settings{Keys: []string{"server"}, Apply: func(_, next *config.Config, changed part.Changes) {
		if changed.Touched("server") && l.Update(link.Options{Server: next.Server, Token: next.Token, Log: log}) {
			log.Info("the server settings changed; reconnecting once")
		}
	}}
}
