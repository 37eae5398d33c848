package backoff

import (
	"testing"
	"time"
)

func TestDoublesToTheCapWithJitter(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second}
	for i, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		if got := b.Nominal(i + 1); got != want {
			t.Errorf("attempt %d: nominal %v, want %v", i+1, got, want)
		}
		for range 50 {
			if got := b.Delay(i + 1); got < want*8/10 || got > want*12/10 {
				t.Fatalf("attempt %d: %v, want %v ±20%%", i+1, got, want)
			}
		}
	}
	if got := b.Nominal(1 << 20); got != time.Second {
		t.Errorf("a very late attempt: %v", got)
	}
	if got := (Backoff{Base: time.Second}).Nominal(5); got != time.Second {
		t.Errorf("cap below base: %v", got)
	}
	if got := (Backoff{}).Delay(3); got != 0 {
		t.Errorf("zero schedule: %v", got)
	}
}
