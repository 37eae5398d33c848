package trigger

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// GPIOOptions choose the button's line and how it is wired.
type GPIOOptions struct {
	// Chip is the GPIO chip: a name under /dev ("gpiochip0", the default)
	// or a path. On a Raspberry Pi the header's pins are on the chip that
	// `gpiodetect` labels pinctrl-bcm2835/-bcm2711 (Pi 1–4, gpiochip0) or
	// pinctrl-rp1 (Pi 5).
	Chip string
	// Line is the line's offset on the chip; on a Pi's header chip it is the
	// BCM GPIO number (GPIO17 is line 17), not the header pin number.
	Line int
	// ActiveHigh means the line reads high while the button is pressed. The
	// default is active-low: a button between the line and ground.
	ActiveHigh bool
	// Bias is "pull-up", "pull-down" or "as-is" (leave the line's bias
	// alone, for an external resistor). The default pulls the line to its
	// released level: up when active-low, down when active-high.
	Bias string
	// Debounce is how long a level must hold before it counts; 0 means
	// DefaultDebounce.
	Debounce time.Duration
}

// The biases.
const (
	BiasPullUp   = "pull-up"
	BiasPullDown = "pull-down"
	BiasAsIs     = "as-is"
)

func (o GPIOOptions) normalize() (GPIOOptions, error) {
	if o.Chip == "" {
		o.Chip = "gpiochip0"
	}
	if o.Line < 0 {
		return o, fmt.Errorf("gpio: line %d: a line is an offset on the chip, 0 or more", o.Line)
	}
	switch o.Bias {
	case "":
		if o.ActiveHigh {
			o.Bias = BiasPullDown
		} else {
			o.Bias = BiasPullUp
		}
	case BiasPullUp, BiasPullDown, BiasAsIs:
	default:
		return o, fmt.Errorf("gpio: bias %q: want %s, %s or %s", o.Bias, BiasPullUp, BiasPullDown, BiasAsIs)
	}
	if o.Debounce < 0 {
		return o, fmt.Errorf("gpio: debounce %v: want 0 (the default, %v) or more", o.Debounce, DefaultDebounce)
	}
	if o.Debounce == 0 {
		o.Debounce = DefaultDebounce
	}
	return o, nil
}

// chipPath is the device file of chip: a name is looked up under dir.
func chipPath(dir, chip string) string {
	if strings.ContainsRune(chip, '/') {
		return chip
	}
	return filepath.Join(dir, chip)
}

// listChips returns the names of the GPIO chips in dir (gpiochip0,
// gpiochip1, … in numeric order).
func listChips(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "gpiochip*"))
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	sort.Slice(names, func(i, j int) bool {
		a, ea := strconv.Atoi(strings.TrimPrefix(names[i], "gpiochip"))
		b, eb := strconv.Atoi(strings.TrimPrefix(names[j], "gpiochip"))
		if ea == nil && eb == nil {
			return a < b
		}
		return names[i] < names[j]
	})
	return names
}

const gpioAccessHint = "that the user running agenthost may open it " +
	"(on Raspberry Pi OS the chips belong to the group gpio: sudo usermod -aG gpio USER, then log in again; " +
	"under systemd: SupplementaryGroups=gpio and DeviceAllow=char-gpiochip rw)"

// chipError explains why the chip at path could not be opened; existing are
// the chips that do exist.
func chipError(chip, path string, err error, existing []string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		var have string
		if len(existing) == 0 {
			have = "there are no GPIO chips here (no " + filepath.Join(filepath.Dir(path), "gpiochip*") +
				"): this machine has no GPIO character device, or its GPIO driver is not loaded"
		} else {
			have = "the chips here are " + strings.Join(existing, ", ")
		}
		return fmt.Errorf("gpio: chip %q not found: %s does not exist; %s. "+
			"Check the chip name (gpiodetect lists the chips with their labels) and %s",
			chip, path, have, gpioAccessHint)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("gpio: chip %q: %w: check %s", chip, err, gpioAccessHint)
	default:
		return fmt.Errorf("gpio: chip %q: %w", chip, err)
	}
}

// lineError says that line does not exist on a chip of n lines.
func lineError(chip string, line, n int) error {
	if n == 0 {
		return fmt.Errorf("gpio: line %d not found: chip %s has no lines", line, chip)
	}
	return fmt.Errorf("gpio: line %d not found: chip %s has lines 0 to %d. "+
		"Check the chip and the line: the line is the offset on the chip (on a Pi, the BCM GPIO number, not the header pin)",
		line, chip, n-1)
}
