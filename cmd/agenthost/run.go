package main

import (
	"context"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/agenthost/agenthost/host"
)

func init() {
	commands["run"] = command{"run the daemon", cmdRun}
}

func cmdRun(e *env, args []string) error {
	fs := e.flags("run")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	log := newLogger(cfg, e.stderr)
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	h, err := host.New(cfg, log)
	if err != nil {
		return err
	}
	if err := addTestProviders(h); err != nil {
		return err
	}
	conv, err := h.Conversation()
	if err != nil {
		return err
	}
	h.Add(h.Plugins(true))
	h.Add(conv)
	for _, t := range h.Triggers(conv) {
		h.Add(t)
	}
	h.Add(h.ControlServer())
	h.Add(systemdNotifier{})
	ctx, stop := signalContext()
	defer stop()
	return h.Run(ctx)
}

// addTestProviders is replaced in binaries built with -tags testkit.
var addTestProviders = func(*host.Host) error { return nil }

// systemdNotifier tells systemd the daemon is ready and feeds its watchdog;
// without systemd (no NOTIFY_SOCKET) it does nothing.
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
