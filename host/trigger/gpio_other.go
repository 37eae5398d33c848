//go:build !linux

package trigger

import (
	"context"
	"errors"
	"log/slog"
)

// GPIO needs the Linux GPIO character device.
func GPIO(ctx context.Context, o GPIOOptions, h Handler, log *slog.Logger) error {
	if _, err := o.normalize(); err != nil {
		return err
	}
	return errors.New("gpio: the GPIO trigger needs Linux (the GPIO character device)")
}
