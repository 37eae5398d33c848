package host

import (
	"context"
	"errors"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/agenthost/agenthost/internal/stall"
)

// Checker is a part of the daemon that can get stuck. Check returns nil,
// before ctx ends, while it makes progress.
type Checker interface {
	Check(ctx context.Context) error
}

// SystemdNotifier returns the component that tells systemd the daemon is
// ready (Type=notify) and stopping, and feeds its watchdog (WatchdogSec=)
// only while every part that can get stuck makes progress: the link's
// loops, the dispatcher, the host's own lock, and every component that is a
// Checker (the conversation). Without systemd (no NOTIFY_SOCKET) it does
// nothing. Add it last, so READY follows the start of everything else.
func (h *Host) SystemdNotifier() Component { return systemdNotifier{h} }

type systemdNotifier struct{ h *Host }

func (systemdNotifier) Name() string { return "systemd notifier" }

func (n systemdNotifier) Run(ctx context.Context, ready func()) error {
	daemon.SdNotify(false, daemon.SdNotifyReady)
	ready()
	defer daemon.SdNotify(false, daemon.SdNotifyStopping)
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(interval / 3)
	defer t.Stop()
	stuck := ""
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, interval/6)
		err := n.h.check(cctx)
		cancel()
		switch {
		case err == nil:
			if stuck != "" {
				n.h.log.Info("the daemon makes progress again; feeding systemd's watchdog", "was", stuck)
				stuck = ""
			}
			daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		case ctx.Err() != nil:
			return nil
		case err.Error() != stuck:
			stuck = err.Error()
			n.h.log.Error("a part of the daemon is stuck; not feeding systemd's watchdog, which restarts agenthost if this lasts",
				"err", err, "watchdog", interval)
		}
	}
}

// check asks every part that can get stuck whether it makes progress.
func (h *Host) check(ctx context.Context) error {
	checks := []Checker{h.link, h.disp, checkFunc(func(ctx context.Context) error {
		if err := stall.Lock(ctx, &h.mu); err != nil {
			return errors.New("the host's register lock is held and not released")
		}
		return nil
	})}
	for _, c := range h.components {
		if c, ok := c.(Checker); ok {
			checks = append(checks, c)
		}
	}
	for _, c := range checks {
		if err := c.Check(ctx); err != nil {
			return err
		}
	}
	return nil
}

type checkFunc func(ctx context.Context) error

func (f checkFunc) Check(ctx context.Context) error { return f(ctx) }
