package trigger

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestGPIOOptionsDefaults(t *testing.T) {
	o, err := GPIOOptions{Line: 17}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if o.Chip != "gpiochip0" || o.Bias != BiasPullUp || o.Debounce != DefaultDebounce || o.ActiveHigh {
		t.Errorf("defaults: %+v, want gpiochip0, active-low, pull-up, %v", o, DefaultDebounce)
	}
	o, err = GPIOOptions{Line: 17, ActiveHigh: true}.normalize()
	if err != nil || o.Bias != BiasPullDown {
		t.Errorf("active-high: bias %q (%v), want %s", o.Bias, err, BiasPullDown)
	}
	o, err = GPIOOptions{Chip: "gpiochip4", Line: 3, Bias: BiasAsIs, Debounce: 5 * ms}.normalize()
	if err != nil || o.Chip != "gpiochip4" || o.Bias != BiasAsIs || o.Debounce != 5*ms {
		t.Errorf("explicit options changed: %+v (%v)", o, err)
	}
}

// Bad options are errors that name the option, before any device is touched.
func TestGPIOBadOptions(t *testing.T) {
	for _, c := range []struct {
		o    GPIOOptions
		want string
	}{
		{GPIOOptions{Line: -1}, "line -1"},
		{GPIOOptions{Line: 4, Bias: "up"}, `bias "up"`},
		{GPIOOptions{Line: 4, Debounce: -ms}, "debounce -1ms"},
	} {
		err := GPIO(context.Background(), c.o, &recorder{}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("GPIO(%+v) = %v, want an error about %s", c.o, err, c.want)
		}
	}
}

func TestListChips(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"gpiochip10", "gpiochip2", "gpiochip0", "ttyS0", "gpiomem"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := listChips(dir), []string{"gpiochip0", "gpiochip2", "gpiochip10"}; !slices.Equal(got, want) {
		t.Errorf("listChips = %v, want %v", got, want)
	}
	if got := listChips(filepath.Join(dir, "none")); len(got) != 0 {
		t.Errorf("listChips of a missing folder = %v", got)
	}
}

func TestChipPath(t *testing.T) {
	if got := chipPath("/dev", "gpiochip4"); got != "/dev/gpiochip4" {
		t.Errorf("a name: %s", got)
	}
	if got := chipPath("/dev", "/dev/gpiochip4"); got != "/dev/gpiochip4" {
		t.Errorf("a path: %s", got)
	}
}

func wantAll(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one that says %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the error does not say %q:\n%v", p, err)
		}
	}
}

// A missing chip, where other chips exist, is named and the others listed.
func TestChipErrorListsTheChipsThatExist(t *testing.T) {
	_, err := os.Open("/nonexistent/gpiochip7")
	err = chipError("gpiochip7", "/dev/gpiochip7", err, []string{"gpiochip0", "gpiochip1"})
	wantAll(t, err, `chip "gpiochip7" not found`, "/dev/gpiochip7 does not exist",
		"the chips here are gpiochip0, gpiochip1", "Check the chip name", "gpiodetect", "group gpio")
}

// Permission denied says how to grant it. This is a constructed EACCES: the
// tests run as root here, where opening a device is never refused.
func TestChipErrorPermissionDeniedConstructed(t *testing.T) {
	err := chipError("gpiochip0", "/dev/gpiochip0", &fs.PathError{Op: "open", Path: "/dev/gpiochip0", Err: syscall.EACCES}, nil)
	wantAll(t, err, `chip "gpiochip0"`, "permission denied", "group gpio", "usermod -aG gpio",
		"SupplementaryGroups=gpio", "DeviceAllow=char-gpiochip rw")
}

func TestLineError(t *testing.T) {
	wantAll(t, lineError("gpiochip0", 60, 54), "line 60 not found", "chip gpiochip0 has lines 0 to 53", "BCM GPIO number")
	wantAll(t, lineError("gpiochip3", 0, 0), "line 0 not found", "chip gpiochip3 has no lines")
}
