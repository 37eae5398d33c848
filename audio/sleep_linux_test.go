package audio

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestAPacerSleepLastsAtLeastItsTime(t *testing.T) {
	s := newSleeper()
	defer s.close()
	for _, d := range []time.Duration{time.Microsecond, 7 * time.Millisecond, 30 * time.Millisecond} {
		start := time.Now()
		if err := s.sleep(context.Background(), d); err != nil {
			t.Fatalf("sleep %v: %v", d, err)
		}
		if took := time.Since(start); took < d {
			t.Errorf("sleep %v returned after %v", d, took)
		}
	}
}

func TestClosingAPacedStreamEndsItsWaitAndReleasesTheTimer(t *testing.T) {
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	before := fds()
	src := Paced(&silence{}, 1) // one sample a second
	buf := make([]int16, 3600)  // an hour of samples: a wait of an hour
	done := make(chan error, 1)
	go func() {
		_, err := src.Read(buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the read start its wait (the test holds either way)
	src.Close()
	if err := <-done; err != nil {
		t.Errorf("the read that Close cut short: %v", err)
	}
	if _, err := src.Read(buf[:1]); !errors.Is(err, ErrClosed) {
		t.Errorf("a read after Close: %v, want ErrClosed", err)
	}
	if after := fds(); after > before {
		t.Errorf("%d file descriptors before the paced stream, %d after it closed", before, after)
	}
}

// silence is an endless source of zeros that reports ErrClosed after Close.
type silence struct{ closed atomic.Bool }

func (s *silence) Read(p []int16) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	clear(p)
	return len(p), nil
}

func (s *silence) Close() error { s.closed.Store(true); return nil }

// TestAPacedStreamInASynctestBubbleKeepsTheBubblesClock: tests that run
// the conversation in virtual time (testing/synctest) pace its microphone
// by the bubble's clock, not by the system's.
func TestAPacedStreamInASynctestBubbleKeepsTheBubblesClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := Paced(&silence{}, 16000)
		defer src.Close()
		buf := make([]int16, 16000*60) // a minute of samples
		start := time.Now()
		for range 3 {
			if _, err := src.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(start); got != 3*time.Minute {
			t.Errorf("three minutes of samples took %v of the bubble's time", got)
		}
	})
}

// A paced stream sleeps every frame for as long as it runs: a sleep that
// allocates is garbage every 60 ms.
func TestAPacerSleepAllocatesNothing(t *testing.T) {
	s := newSleeper()
	defer s.close()
	ctx := context.Background()
	if err := s.sleep(ctx, time.Microsecond); err != nil { // opens the timer
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(50, func() {
		if err := s.sleep(ctx, time.Microsecond); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%.1f allocations per sleep, want none", allocs)
	}
}
