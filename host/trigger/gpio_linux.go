package trigger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"periph.io/x/conn/v3/driver/driverreg"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/host/v3/gpioioctl"
)

// devDir is where the GPIO chips' device files are.
const devDir = "/dev"

// gpioWake bounds each wait for an edge so that the loop sees ctx end and
// re-reads the line's level (in case an edge was lost) at least this often.
const gpioWake = 250 * time.Millisecond

// GPIO watches a button on a GPIO line through the Linux GPIO character
// device, with edge events on both edges and the line's bias set (see
// GPIOOptions): a debounced press calls h.Press, its release h.Release. A
// button already held when GPIO starts is not a press. A press still held when
// GPIO returns is released. A chip or line that is missing, busy or not
// permitted is an error that says what to check. GPIO blocks until ctx ends,
// and then returns nil.
//
// The debounce window is measured between the times edges are read: periph's
// gpioioctl does not pass on the kernel's event timestamps. A stall of the
// process longer than the window can therefore merge a short tap that was
// queued meanwhile into a glitch, never the other way round.
func GPIO(ctx context.Context, o GPIOOptions, h Handler, log *slog.Logger) error {
	o, err := o.normalize()
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "trigger", "trigger", "gpio", "chip", o.Chip, "line", o.Line)

	path := chipPath(devDir, o.Chip)
	f, err := os.Open(path)
	if err != nil {
		return chipError(o.Chip, path, err, listChips(devDir))
	}
	f.Close()
	chip, err := findChip(path)
	if err != nil {
		return fmt.Errorf("gpio: chip %q: %w", o.Chip, err)
	}
	if o.Line >= chip.LineCount() {
		return lineError(o.Chip, o.Line, chip.LineCount())
	}
	line := chip.ByNumber(o.Line)
	// periph requests lines by name: the line needs one that is unique on its chip.
	name := line.Name()
	if name == "" || chip.ByName(name) != line {
		return fmt.Errorf("gpio: line %d of chip %s has no unique name (%q), which the GPIO library needs to request it", o.Line, o.Chip, name)
	}
	pull := map[string]gpio.Pull{BiasPullUp: gpio.PullUp, BiasPullDown: gpio.PullDown, BiasAsIs: gpio.PullNoChange}[o.Bias]
	ls, err := chip.LineSet(gpioioctl.LineInput, gpio.BothEdges, pull, name)
	if err != nil {
		// periph keeps the errno's text only.
		if errors.Is(err, unix.EBUSY) || strings.Contains(err.Error(), unix.EBUSY.Error()) {
			by := "another program"
			if c := line.Consumer(); c != "" {
				by = fmt.Sprintf("%q", c)
			}
			return fmt.Errorf("gpio: line %d (%s) of chip %s is in use by %s (gpioinfo %s shows which): stop it, or choose another line",
				o.Line, name, o.Chip, by, o.Chip)
		}
		return fmt.Errorf("gpio: request line %d (%s) of chip %s: %w", o.Line, name, o.Chip, err)
	}
	defer ls.Close()

	level := func() (bool, error) {
		v, err := ls.Read(1)
		if err != nil {
			return false, fmt.Errorf("gpio: read line %d of chip %s: %w", o.Line, o.Chip, err)
		}
		return (v&1 == 1) == o.ActiveHigh, nil
	}
	pressed, err := level()
	if err != nil {
		return err
	}
	if pressed {
		log.Warn("the button reads pressed at start: waiting for a release (check the wiring, the bias and active_high if this stays)")
	}
	start := time.Now()
	d := NewDebouncer(o.Debounce, pressed)
	do := func(a Action, ok bool) {
		switch {
		case !ok:
		case a == Pressed:
			log.Debug("button pressed")
			h.Press()
		case a == Released:
			log.Debug("button released")
			h.Release()
		}
	}
	defer func() {
		if d.Held() {
			h.Release()
		}
	}()
	log.Info("gpio trigger ready", "name", name, "active_high", o.ActiveHigh, "bias", o.Bias, "debounce", o.Debounce)

	for ctx.Err() == nil {
		wait := gpioWake
		if due, ok := d.Due(); ok {
			wait = min(wait, due-time.Since(start))
		}
		if wait <= 0 {
			do(d.Settle(time.Since(start)))
			continue
		}
		_, edge, err := ls.WaitForEdge(wait)
		now := time.Since(start)
		switch {
		case err == nil:
			if edge == gpio.NoEdge {
				continue
			}
			do(d.Feed(Edge{At: now, Pressed: (edge == gpio.RisingEdge) == o.ActiveHigh}))
		case errors.Is(err, os.ErrDeadlineExceeded):
			do(d.Settle(now))
			// An edge lost from the kernel's queue would leave the level
			// wrong until the next one: compare with the line.
			if p, err := level(); err != nil {
				return err
			} else if p != d.Level() {
				log.Debug("edge missed: the line's level differs", "pressed", p)
				do(d.Feed(Edge{At: now, Pressed: p}))
			}
		default:
			return fmt.Errorf("gpio: wait for an edge on line %d of chip %s: %w", o.Line, o.Chip, err)
		}
	}
	return nil
}

// findChip returns the chip whose device file is path, initialising periph's
// GPIO driver (which opens every chip) on first use.
func findChip(path string) (*gpioioctl.GPIOChip, error) {
	if _, err := driverreg.Init(); err != nil {
		return nil, fmt.Errorf("GPIO driver: %w", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	for _, c := range gpioioctl.Chips {
		r, err := filepath.EvalSymlinks(c.Path())
		if c.Path() == path || (err == nil && r == real) || c.Name() == filepath.Base(real) {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s exists but the GPIO driver could not use it (see the log above; a chip that appeared after the first use of GPIO needs a restart)", path)
}
