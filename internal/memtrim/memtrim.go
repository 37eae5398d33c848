// Package memtrim keeps a long-lived process small on a device with little
// memory: a garbage collector that runs sooner than Go's default, and, once
// the process has been idle for a while, the memory that start-up or a burst
// of work needed handed back (free heap pages to the system, and the
// process's mappings of its own code, which stay in the page cache and come
// back on the next use).
package memtrim

import (
	"os"
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

// Trimmer trims the process when it has been idle for IdleAfter.
type Trimmer struct {
	idle time.Duration
	mu   sync.Mutex
	t    *time.Timer
}

// Start applies the settings and trims once the process has been idle for
// o.IdleAfter (counted from now).
func Start(o Options) *Trimmer {
	if os.Getenv("GOGC") == "" && o.GCPercent > 0 {
		debug.SetGCPercent(o.GCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" && o.MemoryLimit > 0 {
		debug.SetMemoryLimit(o.MemoryLimit)
	}
	t := &Trimmer{idle: o.IdleAfter}
	t.t = time.AfterFunc(o.IdleAfter, Trim)
	return t
}

// Busy restarts the idle period: call it when work ends.
func (t *Trimmer) Busy() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.t.Reset(t.idle)
	t.mu.Unlock()
}

// Trim hands back what the process does not need while idle.
func Trim() {
	debug.FreeOSMemory()
	releaseCode()
	if f := trimmed.Load(); f != nil {
		(*f)()
	}
}
