// Package memtrim keeps a long-lived process small on a device with little
// memory: a garbage collector that runs sooner than Go's default, and, once
// the process has been idle for a while, the memory that start-up or a burst
// of work needed handed back (free heap pages to the system, and the
// process's mappings of its own code, which stay in the page cache and come
// back on the next use).
package memtrim

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// trimmed, when a test sets it, runs after each trim.
var trimmed atomic.Pointer[func()]

// Options of Start.
type Options struct {
	GCPercent   int           // used unless GOGC is set
	MemoryLimit int64         // soft limit, used unless GOMEMLIMIT is set
	IdleAfter   time.Duration // trim this long after the last Busy
}

// Trimmer trims the process when it has been idle for IdleAfter, and again
// after each garbage collection while it stays idle: Go collects at least
// every two minutes, and a collection faults back the pages of the
// executable it reads (its data, the collector's code, the stack maps),
// ~3 MB of the host. The re-trim drops only those mappings (no forced
// collection); its cost is one read of /proc/self/smaps and the pages the
// next collection faults in again from the page cache.
type Trimmer struct {
	idle time.Duration
	mu   sync.Mutex
	t    *time.Timer
	gen  uint64 // counts Busy calls: a watch of an older idle period ends
	// every bounds the re-trims: a process that allocates while no call
	// marks it busy (a stream, music) collects often, and each re-trim
	// costs a read of smaps and the faults that bring the code back.
	every time.Duration
	last  time.Time // of the last trim
}

// retrimEvery is the least time between two trims after collections (Go
// forces one every 2 min in an idle process).
var retrimEvery = time.Minute

// Start applies the settings and trims once the process has been idle for
// o.IdleAfter (counted from now).
func Start(o Options) *Trimmer {
	if os.Getenv("GOGC") == "" && o.GCPercent > 0 {
		debug.SetGCPercent(o.GCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" && o.MemoryLimit > 0 {
		debug.SetMemoryLimit(o.MemoryLimit)
	}
	t := &Trimmer{idle: o.IdleAfter, every: retrimEvery}
	t.t = time.AfterFunc(o.IdleAfter, t.idleTrim)
	return t
}

// idleTrim trims, then watches the collections of this idle period.
func (t *Trimmer) idleTrim() {
	t.mu.Lock()
	gen := t.gen
	t.last = time.Now()
	t.mu.Unlock()
	debug.FreeOSMemory()
	releaseCode()
	t.watchGC(gen)
	signalTrim()
}

// watchGC re-trims after the next garbage collection if the idle period
// gen has not ended by then, and watches the one after it.
func (t *Trimmer) watchGC(gen uint64) {
	runtime.AddCleanup(&sentinel{}, func(gen uint64) { go t.afterGC(gen) }, gen)
}

// sentinel is garbage from birth: its cleanup runs after the next
// collection (it holds a pointer, so it is not a tiny allocation).
type sentinel struct{ _ *byte }

func (t *Trimmer) afterGC(gen uint64) {
	t.mu.Lock()
	idle, due := t.gen == gen, time.Since(t.last) >= t.every
	if idle && due {
		t.last = time.Now()
	}
	t.mu.Unlock()
	if !idle {
		return
	}
	if !due {
		t.watchGC(gen)
		return
	}
	releaseCode()
	t.watchGC(gen)
	signalTrim()
}

// Busy restarts the idle period: call it when work ends.
func (t *Trimmer) Busy() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.gen++
	t.t.Reset(t.idle)
	t.mu.Unlock()
}

// Trim hands back what the process does not need while idle.
func Trim() {
	debug.FreeOSMemory()
	releaseCode()
	signalTrim()
}

func signalTrim() {
	if f := trimmed.Load(); f != nil {
		(*f)()
	}
}
