package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/mcpendpoint"
	"github.com/agenthost/agenthost/host/mcpserver"
)

func init() {
	commands["mcp"] = command{"serve the speaker's services as an MCP server on stdio (for a desktop MCP client's command)", cmdMCP}
}

// cmdMCP serves MCP on stdio, or on --http ADDR. When a daemon runs (its
// control socket answers) the tools and calls are the daemon's; otherwise
// this process runs the providers itself, like `agenthost call`, without
// the device's state (the daemon's alone), until a daemon answers (see
// route). Logs go to stderr: stdout carries the protocol.
func cmdMCP(e *env, args []string) error {
	fs := e.flags("mcp")
	httpAddr := fs.String("http", "", "serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765)")
	tokenEnv := fs.String("token-env", "", "with --http: the environment variable holding the bearer token clients must send")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("usage: agenthost mcp [--http ADDR [--token-env VAR]]")
	}
	var token string
	if *tokenEnv != "" {
		token = os.Getenv(*tokenEnv)
		if token == "" {
			return usageErr("--token-env %s: the variable is empty or not set", *tokenEnv)
		}
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	base := newLogger(cfg, e.stderr) // stderr: stdout carries the protocol
	log := base.With("component", "mcp")
	ctx, stop := signalContext()
	defer stop()

	serve := func(ctx context.Context, srv *mcpserver.Server) error {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan struct{})
		go func() {
			srv.Run(runCtx)
			close(done)
		}()
		defer func() { cancel(); <-done }()
		if *httpAddr == "" {
			return srv.ServeStdio(runCtx, e.stdin, e.stdout)
		}
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("--http %s: %w", *httpAddr, err)
		}
		o := mcpHTTPOptions(cfg.MCP.Serve, token)
		o.AllowedOrigins, o.Log = nil, log
		return srv.Serve(runCtx, ln, o)
	}

	client := e.client(cfg)
	cat, err := mcpendpoint.NewDaemonCatalog(ctx, client, log)
	switch {
	case err == nil:
		log.Info("serving the running daemon's services over MCP", "services", len(cat.Tools()))
		srv := mcpserver.New(cat, mcpendpoint.DaemonCaller(client), mcpserver.Options{Version: version, Log: log})
		return serve(ctx, srv)
	case !errors.Is(err, control.ErrNotRunning):
		return fmt.Errorf("the daemon's control socket answered but not with its services (is it an older agenthost?): %w", err)
	}

	log.Info("no daemon runs; starting the providers in this process (the device's services are the daemon's: they answer that it is not running); calls go to the daemon as soon as one runs")
	adoptOrphans(base)
	defer killLeftovers(base)
	h, err := host.NewStandalone(cfg, base, true)
	if err != nil {
		return err
	}
	if err := addTestProviders(h); err != nil {
		return err
	}
	// The providers run until the MCP session ends or a daemon answers.
	provCtx, stopProviders := context.WithCancel(ctx)
	defer stopProviders()
	ready, provDone := make(chan struct{}), make(chan error, 1)
	go func() {
		provDone <- h.RunProviders(provCtx, func(ctx context.Context) {
			close(ready)
			<-ctx.Done()
		})
	}()
	select {
	case <-ready:
	case err := <-provDone:
		return err
	}
	r := newRoute(client, h, log, stopProviders)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		r.watch(watchCtx)
		close(watched)
	}()
	log.Info("serving the services over MCP", "services", len(h.Registry().Names()))
	serveErr := serve(ctx, mcpserver.New(r, r, mcpserver.Options{Version: version, Log: log}))
	stopWatch()
	<-watched
	stopProviders()
	if err := <-provDone; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return serveErr
}

// mcpHTTPOptions are the Streamable HTTP endpoint's options from mcp.serve
// (its bounds; `agenthost mcp --http` takes them too).
func mcpHTTPOptions(serve config.MCPServe, token string) mcpserver.HTTPOptions {
	return mcpserver.HTTPOptions{
		Token: token, AllowedOrigins: serve.AllowedOrigins, Hosts: serve.Hosts,
		MaxConns: serve.MaxConnections, MaxConnsPerClient: serve.MaxConnectionsPerClient,
		MaxSessions: serve.MaxSessions, SessionTimeout: serve.SessionTimeout.D(),
	}
}
