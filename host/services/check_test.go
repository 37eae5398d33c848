package services

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCheckFindsAHeldLock: the watchdog's check fails while the dispatcher's
// lock is never released (a deadlock) and passes again once it is.
func TestCheckFindsAHeldLock(t *testing.T) {
	d := NewDispatcher(NewRegistry(RegistryOptions{}), DispatchOptions{})
	if err := d.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := d.Check(ctx); err == nil || !strings.Contains(err.Error(), "dispatcher") {
		t.Fatalf("check with the lock held: %v", err)
	}
	d.mu.Unlock()
	if err := d.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}
