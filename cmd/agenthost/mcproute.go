package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/mcpendpoint"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// daemonLook is how often `agenthost mcp` without a daemon looks for one.
const daemonLook = 2 * time.Second

// route is what `agenthost mcp` serves when no daemon ran at its start: the
// tools and calls of this process's own host (whose device answers that
// the daemon is not running) until a daemon answers, then the daemon's for
// good. A daemon is looked for at each call and every daemonLook; when one
// answers, onFound stops this process's providers, so that there is one
// owner of the speaker's state at any time.
type route struct {
	client  *control.Client
	local   *host.Host
	log     *slog.Logger
	onFound func()

	found chan struct{} // closed once daemon is set
	once  sync.Once
	mu    sync.Mutex
	cat   *mcpendpoint.DaemonCatalog
}

func newRoute(client *control.Client, local *host.Host, log *slog.Logger, onFound func()) *route {
	return &route{client: client, local: local, log: log, onFound: onFound, found: make(chan struct{})}
}

// daemon is the daemon's catalog, nil until one answered.
func (r *route) daemon() *mcpendpoint.DaemonCatalog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cat
}

// look asks for a daemon's services; when one answers, it is the route's
// from now on. It reports whether a daemon serves the route.
func (r *route) look(ctx context.Context) bool {
	if r.daemon() != nil {
		return true
	}
	cat, err := mcpendpoint.NewDaemonCatalog(ctx, r.client, r.log)
	if err != nil {
		if !errors.Is(err, control.ErrNotRunning) {
			r.log.Warn("the daemon's control socket answered but not with its services", "err", err)
		}
		return false
	}
	r.once.Do(func() {
		r.mu.Lock()
		r.cat = cat
		r.mu.Unlock()
		r.log.Info("the daemon runs now: serving its services over MCP; this process's providers stop", "services", len(cat.Tools()))
		close(r.found)
		r.onFound()
	})
	return true
}

// watch looks for a daemon every daemonLook until one answers or ctx ends.
func (r *route) watch(ctx context.Context) {
	t := time.NewTicker(daemonLook)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.found:
			return
		case <-t.C:
			r.look(ctx)
		}
	}
}

// Tools implements mcpserver.Catalog.
func (r *route) Tools() []mcpserver.Tool {
	if cat := r.daemon(); cat != nil {
		return cat.Tools()
	}
	return mcpserver.RegistryCatalog(r.local.Registry()).Tools()
}

// Subscribe implements mcpserver.Catalog: the local registry's changes,
// the switch to the daemon, then the daemon's changes.
func (r *route) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	signal := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	local, stopLocal := r.local.Registry().Subscribe()
	go func() {
		defer close(done)
		defer stopLocal()
		for {
			select {
			case <-ctx.Done():
				return
			case <-local:
				signal()
			case <-r.found:
				stopLocal()
				signal()
				changes, stop := r.daemon().Subscribe()
				defer stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-changes:
						signal()
					}
				}
			}
		}
	}()
	return ch, func() { cancel(); <-done }
}

// Call implements mcpserver.Caller: the daemon's answer whenever one runs
// (a call it answers makes the route its), else this process's.
func (r *route) Call(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
	if r.daemon() == nil {
		var out voice.Outcome
		err := r.client.Do(ctx, "POST /v1/call", calls.CallRequest{Service: service, Params: params, Caller: "mcp"}, &out)
		switch {
		case errors.Is(err, control.ErrNotRunning):
			return r.local.CallLocal(services.WithCaller(ctx, services.CallerMCP), service, params)
		case err != nil:
			return voice.Outcome{Error: fmt.Sprintf("%s: the agenthost daemon did not answer: %v", service, err)}
		}
		r.look(context.WithoutCancel(ctx))
		return out
	}
	return mcpendpoint.DaemonCaller(r.client).Call(ctx, service, params)
}
