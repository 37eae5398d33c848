package trigger

import (
	"context"
	"strings"
	"testing"
)

// On a machine without the chip, GPIO returns at once with an error that
// names it, lists the chips that do exist (none, on this VM) and says what to
// check.
func TestGPIOMissingChip(t *testing.T) {
	const chip = "gpiochip99"
	var r recorder
	err := GPIO(context.Background(), GPIOOptions{Chip: chip, Line: 17}, &r, testLog(t))
	have := "there are no GPIO chips here (no /dev/gpiochip*)"
	if chips := listChips(devDir); len(chips) > 0 {
		have = "the chips here are " + strings.Join(chips, ", ")
	}
	t.Log(err)
	wantAll(t, err, `chip "gpiochip99" not found`, "/dev/gpiochip99 does not exist", have,
		"Check the chip name", "gpiodetect", "group gpio")
	if got := r.events(); len(got) != 0 {
		t.Errorf("the handler was called: %v", got)
	}
}
