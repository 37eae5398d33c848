package services_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/services"
)

// TestAHungProviderLeavesTheOthersAnswering: the voice server starts 80
// calls to a provider that never answers (more than the 64 of
// services.max_in_flight): that provider gets its share, 16 by default, and
// its further calls are busy, naming it and the setting; the built-ins and
// another provider answer meanwhile (issue 23 item 19: every service was
// "busy: 64 calls in flight" until the hung calls timed out).
func TestAHungProviderLeavesTheOthersAnswering(t *testing.T) {
	h := newHolder(t)
	d, _ := setup(t, services.DispatchOptions{Timeout: time.Hour}, h)
	entered := 0
	var busy []string
	for i := range 80 {
		ch := dispatchAsync(d, "", "hold", `{}`)
		select {
		case <-h.entered:
			entered++
		case out := <-ch:
			if out.Success {
				t.Fatalf("call %d to the hung provider answered: %+v", i, out)
			}
			busy = append(busy, out.Error)
		}
	}
	if entered != 16 {
		t.Errorf("%d calls reached the hung provider, want 16 (its share of the 64)", entered)
	}
	if want := "busy: 16 calls to plugin:hold in flight (services.max_in_flight_per_provider)"; len(busy) == 0 || busy[0] != want {
		t.Errorf("the hung provider's further calls: %q, want %q", busy[:min(len(busy), 1)], want)
	}
	if out := call(d, "", "get_current_time", ""); !out.Success || !strings.Contains(string(out.Data), "2025") {
		t.Errorf("the built-in beside a hung provider: %+v", out)
	}
	if out := call(d, "", "tool", `{"filename":"a"}`); !out.Success {
		t.Errorf("another provider beside a hung one: %+v", out)
	}
}
