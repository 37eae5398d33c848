package part

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestTouchedMatchesAKeyAndWhatIsBelowIt: "services" covers
// services.timeout, but not services_extra.
func TestTouchedMatchesAKeyAndWhatIsBelowIt(t *testing.T) {
	c := Changes{"services.timeout", "audio.input"}
	for _, tc := range []struct {
		prefixes []string
		want     bool
	}{{[]string{"services"}, true}, {[]string{"services.timeout"}, true}, {[]string{"servic"}, false},
		{[]string{"audio.input_file"}, false}, {[]string{"log", "audio"}, true}, {nil, false}} {
		if got := c.Touched(tc.prefixes...); got != tc.want {
			t.Errorf("Touched(%q) = %v, want %v", tc.prefixes, got, tc.want)
		}
	}
}

type recorder struct {
	name  string
	mu    *sync.Mutex
	order *[]string
	err   error
}

func (r recorder) Name() string { return r.name }
func (r recorder) Run(ctx context.Context, ready func()) error {
	r.mu.Lock()
	*r.order = append(*r.order, r.name)
	r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	ready()
	<-ctx.Done()
	return nil
}

// TestStartRunsPartsInOrderAndStopsAtTheFirstFailure: each part starts
// once the one before it is ready; a part that fails ends the start, with
// its name on the error, and the parts after it never start.
func TestStartRunsPartsInOrderAndStopsAtTheFirstFailure(t *testing.T) {
	var mu sync.Mutex
	var order []string
	mk := func(name string, err error) Part { return recorder{name, &mu, &order, err} }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	parts := []Part{mk("a", nil), mk("b", nil), mk("c", errors.New("broken")), mk("d", nil)}
	err := Start(ctx, ctx, parts, &wg, make(chan error, len(parts)))
	cancel()
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "c: broken") {
		t.Fatalf("Start returned %v, want c's failure", err)
	}
	if !slices.Equal(order, []string{"a", "b", "c"}) {
		t.Fatalf("started %q, want a, b, c and not d", order)
	}
}
