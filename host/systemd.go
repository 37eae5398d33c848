package host

import (
	"context"
	"errors"

	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/systemd"
	"github.com/agenthost/agenthost/internal/stall"
)

// SystemdNotifier returns the part that tells systemd the daemon is ready
// and stopping and feeds its watchdog while the link's loops, the
// dispatcher, the host's own lock and every part that is a Checker (the
// conversation) make progress. Add it last.
func (h *Host) SystemdNotifier() Component { return systemd.Notifier(h.log, h.checks) }

// checks are the parts that can get stuck.
func (h *Host) checks() []part.Checker {
	checks := []part.Checker{h.link, h.disp, part.CheckFunc(func(ctx context.Context) error {
		if err := stall.Lock(ctx, &h.mu); err != nil {
			return errors.New("the host's register lock is held and not released")
		}
		return nil
	})}
	for _, c := range h.components {
		if c, ok := c.(part.Checker); ok {
			checks = append(checks, c)
		}
	}
	return checks
}
