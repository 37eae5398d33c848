package pluginmgr

import (
	"context"
	"reflect"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/supervise"
)

// A configuration reload: every plugin whose inputs changed is looked at
// again from its current inputs.

// Reconfigure applies new plugin settings (a configuration reload) and
// looks again at every plugin whose inputs changed: its plugins.config
// entry, its plugins.sha256 pin, or anything else the caller's also reports
// for its provider ID ("plugin:<name>"; its services prefix, say). A plugin
// that could not run (broken, parked) or whose newest build failed is tried
// again; a running one is configured again (one that rejects its new config
// keeps the old, as the SDK promises, and says why in the log); a pin is
// checked against the binary at once. The owner's network list
// (plugins.network.allow) applies from the next call. also may be nil.
func (m *Manager) Reconfigure(p config.Plugins, also func(id string) bool) {
	m.cfgMu.Lock()
	oldConfigs, oldPins, oldGrants := m.configs, m.pins, m.grants
	m.pins, m.configs, m.grants, m.allow = p.SHA256, p.Config, p.Sandbox, p.Network.Allow
	m.cfgMu.Unlock()
	m.audio.setPolicy(p.Audio)
	for _, pl := range m.all() {
		var why []string
		conf := !reflect.DeepEqual(oldConfigs[pl.name], p.Config[pl.name])
		if conf {
			why = append(why, "plugins.config."+pl.name)
		}
		pin := !strings.EqualFold(oldPins[pl.name], p.SHA256[pl.name])
		if pin {
			why = append(why, "plugins.sha256."+pl.name)
		}
		// A sandbox is set when the process starts: a new grant needs a new one.
		if !reflect.DeepEqual(oldGrants[pl.name], p.Sandbox[pl.name]) {
			why = append(why, "plugins.sandbox."+pl.name)
			pin = true
		}
		if also != nil && also("plugin:"+pl.name) {
			why = append(why, "its services prefix")
		}
		if len(why) > 0 {
			m.reconsider(pl, conf, pin, strings.Join(why, ", "))
		}
	}
}

// reconsider looks at one plugin again after its settings (named in why)
// changed.
func (m *Manager) reconsider(pl *plugin, conf, pin bool, why string) {
	pl.settle()
	status := pl.sup.Status()
	st, served := status.State, pl.serving(status)
	pl.mu.Lock()
	handed, starting := pl.hash, pl.startingLocked(pl.hash)
	pl.mu.Unlock()
	inst, running := pl.sup.Running().(*instance)
	switch {
	case st == supervise.StateBroken || st == supervise.StateParked:
		m.log.Info(st+" plugin's settings changed; trying it again", "plugin", pl.name, "changed", why)
		m.load(pl, true)
		return
	case handed != served && starting:
		// A start of its newest build may have read the old settings.
		m.log.Info("the settings of a plugin changed while its newest build was starting; starting that build again", "plugin", pl.name, "changed", why)
		m.load(pl, true)
	case handed != served && st != supervise.StateStarting:
		// Its newest build failed to start (the old one serves): it may
		// start with these settings.
		m.log.Info("the settings of a plugin whose newest build failed to start changed; trying that build again", "plugin", pl.name, "changed", why)
		m.load(pl, true)
	case pin && running:
		if err := checkPin(pl.name, m.pin(pl.name), served); err != nil {
			m.log.Warn("the new pin does not match the running plugin: it keeps serving, and will not start again until the pin or the binary matches",
				"plugin", pl.name, "err", err)
		}
	case pin:
		m.load(pl, true) // not running: the pin is checked now, not at the next call
	}
	if !conf {
		return
	}
	if !running {
		m.log.Info("plugin config changed; it applies when the plugin next starts", "plugin", pl.name)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.o.startTimeout)
	err := inst.rpc.Configure(ctx, m.pluginConfig(pl.name))
	cancel()
	if err != nil {
		m.log.Error("the plugin rejected its new config (plugins.config."+pl.name+"); it keeps the old one", "plugin", pl.name, "err", err)
		why := "it rejected plugins.config." + pl.name + " at the last reload (" + err.Error() + "); it runs with the config it started with"
		inst.rejected.Store(&why)
		return
	}
	inst.rejected.Store(nil)
	m.log.Info("plugin configured again with its new config", "plugin", pl.name)
}
