// Package httpserve serves the daemon's HTTP listeners that a network can
// reach (the MCP endpoint, the metrics).
package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Options configures Serve.
type Options struct {
	// Name is the listener in log lines ("the MCP endpoint").
	Name string
	// MaxConns bounds the connections open at once, MaxConnsPerClient
	// those from one client address; the settings name them in errors.
	MaxConns, MaxConnsPerClient               int
	MaxConnsSetting, MaxConnsPerClientSetting string
	// ReadHeaderTimeout, BodyTimeout and IdleTimeout bound reading a
	// request's header, its body, and the wait for the next request.
	ReadHeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// ExposedWarning is logged when the address is beyond loopback.
	ExposedWarning string
	Log            *slog.Logger
}

// Serve serves h on ln until ctx ends. (Stub: today's behaviour.)
func Serve(ctx context.Context, ln net.Listener, h http.Handler, o Options) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
