package main

import (
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
	cs := h.ControlServer()
	h.AddMCPEndpoints(cs) // for `agenthost mcp`
	h.Add(cs)
	h.Add(h.SystemdNotifier())
	ctx, stop := signalContext()
	defer stop()
	return h.Run(ctx)
}

// addTestProviders is replaced in binaries built with -tags testkit.
var addTestProviders = func(*host.Host) error { return nil }
