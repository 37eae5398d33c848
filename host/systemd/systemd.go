// Package systemd is the daemon's part that talks to systemd: READY and
// STOPPING (Type=notify), and the watchdog (WatchdogSec=), fed only while
// every part that can get stuck makes progress.
package systemd

import (
	"context"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/agenthost/agenthost/host/part"
)

// Notifier returns the part that tells systemd the daemon is ready and
// stopping, and feeds its watchdog only while every Checker that checks
// returns makes progress. Without systemd (no NOTIFY_SOCKET) it does
// nothing. Start it last, so READY follows the start of everything else.
func Notifier(log *slog.Logger, checks func() []part.Checker) part.Part {
	return notifier{log: log, checks: checks}
}

type notifier struct {
	log    *slog.Logger
	checks func() []part.Checker
}

func (notifier) Name() string { return "systemd notifier" }

func (n notifier) Run(ctx context.Context, ready func()) error {
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
		err := n.check(cctx)
		cancel()
		switch {
		case err == nil:
			if stuck != "" {
				n.log.Info("the daemon makes progress again; feeding systemd's watchdog", "was", stuck)
				stuck = ""
			}
			daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		case ctx.Err() != nil:
			return nil
		case err.Error() != stuck:
			stuck = err.Error()
			n.log.Error("a part of the daemon is stuck; not feeding systemd's watchdog, which restarts agenthost if this lasts",
				"err", err, "watchdog", interval)
		}
	}
}

// check asks every part that can get stuck whether it makes progress.
func (n notifier) check(ctx context.Context) error {
	for _, c := range n.checks() {
		if err := c.Check(ctx); err != nil {
			return err
		}
	}
	return nil
}
