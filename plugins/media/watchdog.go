package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// A decoder that gives no sound while it is fed (stuck on crafted input,
// stopped, spinning) is ended after the hang timeout: the sound it plays
// ends, and last_ended says so. "Fed" is what separates it from a slow
// stream: the time its input waited for the network does not count (a
// stream that sends nothing is the stall timeout's), nor does time in
// which nobody asks it for sound (paused, the host's buffer full).

// outputWatch is the decoder's stdout, watched once its first sound played.
type outputWatch struct {
	f     *os.File
	d     *decoder
	hang  time.Duration
	armed atomic.Bool
}

func (w *outputWatch) Read(p []byte) (int, error) {
	if !w.armed.Load() {
		return w.f.Read(p)
	}
	start := time.Now()
	waited := w.d.inputWaited(start)
	var mu sync.Mutex
	done := false
	var timer *time.Timer
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		now := time.Now()
		fed := now.Sub(start) - (w.d.inputWaited(now) - waited)
		if fed < w.hang {
			timer.Reset(w.hang - fed)
			return
		}
		w.d.hung.Store(true)
		w.d.kill()
	}
	mu.Lock()
	timer = time.AfterFunc(w.hang, check)
	mu.Unlock()
	n, err := w.f.Read(p)
	mu.Lock()
	done = true
	timer.Stop()
	mu.Unlock()
	if w.d.hung.Load() {
		return n, w.d.hangError()
	}
	return n, err
}

func (w *outputWatch) Close() error { return w.f.Close() }

// hangError says that the decoder hung.
func (d *decoder) hangError() error {
	return fmt.Errorf("the decoder hung: it gave no sound for %s while it had input (plugins.config.media.hang_timeout)", d.hang)
}

// inputClock counts the time the decoder's feed waits for the network.
type inputClock struct {
	r io.Reader
	d *decoder
}

func (c *inputClock) Read(p []byte) (int, error) {
	c.d.inputSince.Store(time.Now().UnixNano())
	n, err := c.r.Read(p)
	since := c.d.inputSince.Swap(0)
	c.d.inputTotal.Add(time.Now().UnixNano() - since)
	return n, err
}

// inputWaited is the time the feed has waited for the network until now.
func (d *decoder) inputWaited(now time.Time) time.Duration {
	total := d.inputTotal.Load()
	if since := d.inputSince.Load(); since != 0 {
		total += max(0, now.UnixNano()-since)
	}
	return time.Duration(total)
}
