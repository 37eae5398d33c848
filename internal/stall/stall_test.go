package stall

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestSectionStuckOnlyWhenOneCallSpansTwoChecks(t *testing.T) {
	var s Section
	if s.Stuck() {
		t.Fatal("stuck before any call")
	}
	s.Enter()
	if s.Stuck() {
		t.Fatal("stuck at the first check of a call")
	}
	if !s.Stuck() {
		t.Fatal("not stuck when the same call is inside at the next check")
	}
	s.Leave()
	s.Enter() // a new call: progress was made
	if s.Stuck() {
		t.Fatal("stuck although a call ended and another began")
	}
	s.Leave()
	for range 2 {
		if s.Stuck() {
			t.Fatal("stuck while idle")
		}
	}
}

func TestLock(t *testing.T) {
	var mu sync.Mutex
	if err := Lock(context.Background(), &mu); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Lock(ctx, &mu); err != ErrHeld {
		t.Fatalf("a held mutex: %v", err)
	}
	go func() { time.Sleep(10 * time.Millisecond); mu.Unlock() }()
	if err := Lock(context.Background(), &mu); err != nil {
		t.Fatalf("a mutex released later: %v", err)
	}
}
