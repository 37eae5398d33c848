package host

import (
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/systemd"
)

// SystemdNotifier returns the part that tells systemd the daemon is ready
// and stopping and feeds its watchdog while the link's loops, the
// dispatcher, the host's own lock and every part that is a Checker (the
// conversation) make progress. Add it last.
func (h *Host) SystemdNotifier() Component { return systemd.Notifier(h.log, h.checks) }

// checks are the parts that can get stuck.
func (h *Host) checks() []part.Checker {
	checks := []part.Checker{h.link, h.calls}
	for _, c := range h.components {
		if c, ok := c.(part.Checker); ok {
			checks = append(checks, c)
		}
	}
	return checks
}
