//go:build !linux

package trigger

import (
	"context"
	"log/slog"
	"os"
)

// Key is the Linux terminal trigger; elsewhere it does nothing and returns
// nil, as it does when in is not a terminal.
func Key(ctx context.Context, in *os.File, h Handler, log *slog.Logger) error {
	if log != nil {
		log.Debug("the key trigger needs Linux", "component", "trigger", "trigger", "key")
	}
	return nil
}
