package memtrim

import (
	"runtime"
	"testing"
	"time"
)

// TestAGarbageCollectionWhileIdleTrimsAgain: Go collects at least every two
// minutes even in an idle process, and the collection brings back pages of
// the executable (its data, the collector's code and tables), ~3 MB of a
// trimmed host, so the trim runs again after a collection while the process
// stays idle.
func TestAGarbageCollectionWhileIdleTrimsAgain(t *testing.T) {
	done := make(chan struct{}, 64)
	f := func() {
		select {
		case done <- struct{}{}:
		default:
		}
	}
	trimmed.Store(&f)
	defer trimmed.Store(nil)
	every := retrimEvery
	retrimEvery = 0 // no least time between two trims
	defer func() { retrimEvery = every }()
	tr := Start(Options{IdleAfter: time.Millisecond})
	defer func() { // end the idle period, and no other with it
		tr.mu.Lock()
		tr.idle = time.Hour
		tr.mu.Unlock()
		tr.Busy()
	}()
	<-done // the idle trim
	runtime.GC()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("no trim after a garbage collection while idle")
	}
}

// TestATrimAllocatesLittle: the re-trim after each collection while idle
// reads /proc/self/smaps (~100 kB for the host); read whole and split, it
// left ~3× that on the heap it had just handed back, every time.
func TestATrimAllocatesLittle(t *testing.T) {
	var a, b runtime.MemStats
	releaseCode()
	runtime.ReadMemStats(&a)
	const n = 10
	for range n {
		releaseCode()
	}
	runtime.ReadMemStats(&b)
	per := (b.TotalAlloc - a.TotalAlloc) / n
	t.Logf("one trim of the mappings allocates %d bytes", per)
	if per > 32<<10 {
		t.Fatalf("one trim of the mappings allocates %d bytes; want at most 32 KiB", per)
	}
}
