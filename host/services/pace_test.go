package services_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/services"
)

// TestChangesArePaced: a provider whose set changes as fast as Put goes
// gives change signals at most once per MinChangeInterval (a bound on a
// count over a measured window), to Changes and to subscribers alike, and
// a signal comes after the last change: a reader that reads the set when
// signalled ends with the last one.
func TestChangesArePaced(t *testing.T) {
	r := services.NewRegistry(services.RegistryOptions{})
	sub, cancel := r.Subscribe()
	defer cancel()
	type reader struct {
		name    string
		signals atomic.Int64
		seen    atomic.Value // the description of s when last signalled
	}
	done := make(chan struct{})
	defer close(done)
	read := func(name string, ch <-chan struct{}) *reader {
		rd := &reader{name: name}
		rd.seen.Store("")
		go func() {
			for {
				select {
				case <-ch:
					rd.signals.Add(1)
					rd.seen.Store(r.Register().Services["s"].Description)
				case <-done:
					return
				}
			}
		}()
		return rd
	}
	readers := []*reader{read("Changes", r.Changes()), read("a subscriber", sub)}
	start := time.Now()
	n := 0
	for ; time.Since(start) < time.Second; n++ {
		mustPut(t, r, &fake{id: "plugin:flappy", svcs: []services.Service{{Name: "s", Description: fmt.Sprint("version ", n)}}})
	}
	elapsed := time.Since(start)
	final := fmt.Sprint("version ", n-1)
	for _, rd := range readers {
		deadline := time.Now().Add(10 * time.Second)
		for rd.seen.Load() != final {
			if time.Now().After(deadline) {
				t.Fatalf("%s: signalled last with %q, never after the last change (%s)", rd.name, rd.seen.Load(), final)
			}
			time.Sleep(time.Millisecond)
		}
		got := int(rd.signals.Load())
		t.Logf("%s: %d signals for %d changes in %v", rd.name, got, n, elapsed.Round(time.Millisecond))
		if most := int(elapsed/services.MinChangeInterval) + 2; got > most {
			t.Errorf("%s: %d signals in %v, over %d (one per %v)", rd.name, got, elapsed, most, services.MinChangeInterval)
		}
	}
}
