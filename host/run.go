package host

import (
	"context"
	"net"
	"sync"

	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/systemd"
)

// Run starts the parts, then systemd's notifier, then the link, and blocks until ctx ends. It
// returns nil after a clean shutdown.
func (h *Host) Run(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	parts := append(h.parts, systemd.Notifier(h.log, h.checks)) // READY follows the start of everything else
	errc := make(chan error, len(parts)+1)
	if err := part.Start(ctx, runCtx, parts, &wg, errc); err != nil {
		cancel()
		wg.Wait()
		if ctx.Err() != nil {
			h.log.Info("agenthost stopped during start-up")
			return nil
		}
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.calls.Serve(runCtx)
	}()
	cfg := h.Config()
	h.log.Info("agenthost started", "server", cfg.Server.Address, "services", len(h.calls.Registry().Entries()))
	if !cfg.Server.TLS && !loopback(cfg.Server.Address) {
		h.log.Warn("the link to the voice server is not encrypted and the server is not on this machine: the token and what is said cross the network in the clear; set server.tls: true if the server offers TLS",
			"server", cfg.Server.Address)
	}
	linkCtx, stopLink := context.WithCancel(ctx)
	defer stopLink()
	linkDone := make(chan struct{})
	go func() {
		defer close(linkDone)
		h.link.Run(linkCtx)
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		h.log.Error("a component failed; shutting down", "err", err)
	}
	stopLink()
	<-linkDone // the link says DISCONNECT and returns
	h.calls.Stop()
	cancel()
	wg.Wait()
	h.log.Info("agenthost stopped")
	return err
}

// loopback reports whether address (host:port) names this machine.
func loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RunProviders starts the parts (of a standalone host: the providers),
// runs f, and stops them: `agenthost call` without a daemon.
func (h *Host) RunProviders(ctx context.Context, f func(ctx context.Context)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if err := part.Start(ctx, ctx, h.parts, &wg, make(chan error, len(h.parts))); err != nil {
		return err
	}
	h.mcp.Settle(ctx) // a one-off call has no later register to wait for
	f(ctx)
	return nil
}

// checks are the parts that can get stuck: the link's loops, the calls
// (the dispatcher, the register's lock) and every part that is a Checker
// (the conversation).
func (h *Host) checks() []part.Checker {
	checks := []part.Checker{h.link, h.calls}
	for _, p := range h.parts {
		if c, ok := p.(part.Checker); ok {
			checks = append(checks, c)
		}
	}
	return checks
}
