package host

import (
	"context"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// SystemdNotifier returns the component that tells systemd the daemon is
// ready (Type=notify) and stopping, and feeds its watchdog (WatchdogSec=).
// Without systemd (no NOTIFY_SOCKET) it does nothing. Add it last, so READY
// follows the start of everything else.
func (h *Host) SystemdNotifier() Component { return systemdNotifier{} }

type systemdNotifier struct{}

func (systemdNotifier) Name() string { return "systemd notifier" }

func (systemdNotifier) Run(ctx context.Context, ready func()) error {
	daemon.SdNotify(false, daemon.SdNotifyReady)
	ready()
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		<-ctx.Done()
	} else {
		t := time.NewTicker(interval / 3)
		defer t.Stop()
		for done := false; !done; {
			select {
			case <-t.C:
				daemon.SdNotify(false, daemon.SdNotifyWatchdog)
			case <-ctx.Done():
				done = true
			}
		}
	}
	daemon.SdNotify(false, daemon.SdNotifyStopping)
	return nil
}
