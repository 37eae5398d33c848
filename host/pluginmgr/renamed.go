package pluginmgr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/supervise"
)

// A binary renamed into the folder (the documented way to install) is a
// new file: it is started first and hashed after. Hashing a plugin binary
// (20 MB for a Go build, 15 ms of CPU) took as long as a third of a reload,
// and on two cores, beside the plugin's own start, it slowed that start.
// Its print (printOf: its size and the hash of its head, a read of 64 KiB)
// tells a new build apart at once: it is installed, then hashed. One whose
// print is the serving build's is hashed beside its start and compared by
// its hash, and dropped when it is the same (supervise.ErrUnchanged). A
// pinned plugin is always hashed first (load): its pin is checked before
// anything runs.

// hashAfter is how long the hash of a build renamed in, started, waits
// after its start was handled, unless something needs it sooner (settle:
// a status, the next load). Hashing at once took the processor the
// register of the new services needed: the register left 1.5 ms later,
// or, once the hash yielded, reached the server 1.5 ms later (two busy
// cores, BenchmarkHostPluginReload); by 100 ms it is out and the old
// process stopped.
const hashAfter = 100 * time.Millisecond

// build is a binary's sha256 (hex) and its print.
type build struct{ hash, print string }

// headBytes is how much of a binary its print hashes: a Go or C build's ID
// notes are in its first pages.
const headBytes = 64 << 10

// fileBuild hashes the binary at path, and prints it, in one read. In the
// background (a build renamed in, hashed after its start), it yields
// between reads: see yielding.
func fileBuild(path string, background bool) (build, error) {
	f, err := os.Open(path)
	if err != nil {
		return build{}, err
	}
	defer f.Close()
	var r io.Reader = f
	if background {
		r = yielding{f}
	}
	h, head := sha256.New(), sha256.New()
	n, err := io.Copy(io.MultiWriter(h, head), io.LimitReader(r, headBytes))
	if err != nil {
		return build{}, err
	}
	rest, err := io.Copy(h, r)
	if err != nil {
		return build{}, err
	}
	return build{hash: hex.EncodeToString(h.Sum(nil)), print: printText(n+rest, head.Sum(nil))}, nil
}

// yielding lets the goroutines that are ready run before each read (32
// KiB for io.Copy, some 25 µs of hashing): a hash in the background does
// not hold a processor for its 15 ms while a register or a call's
// goroutine waits on it (up to 4 ms on two busy cores,
// BenchmarkHostPluginReload).
type yielding struct{ r io.Reader }

func (y yielding) Read(p []byte) (int, error) {
	runtime.Gosched()
	return y.r.Read(p)
}

// printOf returns the print of the binary at path: two binaries whose
// prints differ are different builds; equal prints tell nothing.
func printOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	head := sha256.New()
	if _, err := io.Copy(head, io.LimitReader(f, headBytes)); err != nil {
		return "", err
	}
	return printText(fi.Size(), head.Sum(nil)), nil
}

func printText(size int64, head []byte) string {
	return fmt.Sprintf("%d:%x", size, head)
}

// servingPrint is the print of the build behind p's services as st shows
// them, "" when unknown.
func (p *plugin) servingPrint(st supervise.Status) string {
	if inst, ok := p.sup.Running().(*instance); ok && st.Info.PID != 0 {
		return inst.print
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.print
}

// digest is the hashing of a binary renamed in: done is closed once its
// result is recorded.
type digest struct {
	b    build
	err  error
	done chan struct{}
	inst *instance // started before the hash was known: it gets it (p.mu)
}

// loadRenamed hands p's binary to its supervisor to be started, and
// hashed; a build that turns out to be the one serving is dropped
// (supervise.ErrUnchanged). Later starts (restarts, lazy starts) know the
// hash.
func (m *Manager) loadRenamed(p *plugin) {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.settle()
	name, path := p.name, p.path
	d := &digest{done: make(chan struct{})}
	// Hashing beside the start would slow it: it waits until the start is
	// over, unless the build may be the one serving (its hash decides).
	pending := &pendingLoad{hashed: d.done} // its build is known once hashed
	pending.kick = sync.OnceFunc(func() { go m.hashRenamed(p, pending, d, path) })
	pr, perr := printOf(path)
	if perr != nil || pr == p.servingPrint(p.sup.Status()) {
		pending.kick()
	}
	first := true // only the supervisor's loop runs the starter
	start := func(ctx context.Context) (supervise.Child, error) {
		if !first {
			pending.kick()
			<-d.done
			if d.err != nil {
				return nil, fmt.Errorf("cannot read %s: %w", path, d.err)
			}
			return m.startBuild(ctx, p, d.b)
		}
		first = false
		inst, err := m.start(ctx, name, path)
		if err != nil {
			return nil, err
		}
		st := p.sup.Status()
		serving := st.State == supervise.StateRunning || st.State == supervise.StateIdle
		if sp := p.servingPrint(st); perr == nil && (!serving || (sp != "" && sp != pr)) {
			return m.startedRenamed(inst, p, d, pr)
		}
		pending.kick()
		<-d.done
		if d.err != nil {
			inst.Kill()
			return nil, fmt.Errorf("cannot read %s: %w", path, d.err)
		}
		if serving && p.serving(st) == d.b.hash {
			inst.Kill()
			m.log.Debug("plugin binary touched but unchanged; nothing to do", "plugin", name, "state", st.State)
			return nil, supervise.ErrUnchanged
		}
		return m.started(inst, p, d.b)
	}
	handled := p.sup.Load(start, nil)
	go func() {
		<-handled
		time.AfterFunc(hashAfter, pending.kick)
	}()
	p.mu.Lock()
	pending.handled = handled
	p.loading = pending
	p.mu.Unlock()
}

// hashRenamed hashes a binary renamed in and records its hash: as the
// build handed, and on the instance started before it was known.
func (m *Manager) hashRenamed(p *plugin, pending *pendingLoad, d *digest, path string) {
	startFault(p.name, "hashing")
	b, err := fileBuild(path, true)
	p.mu.Lock()
	d.b, d.err = b, err
	if err == nil {
		p.hash, pending.hash = b.hash, b.hash
	}
	inst := d.inst
	if inst != nil && err == nil {
		inst.hash.Store(&b.hash)
		if p.served == "" {
			p.served = b.hash
		}
	}
	close(d.done)
	p.mu.Unlock()
	if inst == nil {
		return
	}
	if err != nil {
		m.log.Warn("cannot hash the plugin binary that now serves; its status shows no sha256", "plugin", p.name, "err", err)
		return
	}
	m.cacheDescription(inst, p, b.hash)
}

// startedRenamed records a plugin's new process, a build other than the
// one serving (by its print), before it is handed to the supervisor. When
// its hash is not known yet, hashRenamed records it.
func (m *Manager) startedRenamed(inst *instance, p *plugin, d *digest, print string) (supervise.Child, error) {
	startFault(p.name, "up")
	inst.print = print
	p.mu.Lock()
	select {
	case <-d.done:
		p.mu.Unlock()
		if d.err != nil {
			inst.Kill()
			return nil, fmt.Errorf("cannot read %s: %w", p.path, d.err)
		}
		inst.hash.Store(&d.b.hash)
		p.mu.Lock()
		p.version, p.served, p.print = inst.desc.Version, d.b.hash, print
		p.mu.Unlock()
		m.cacheDescription(inst, p, d.b.hash)
	default:
		d.inst = inst
		// Unknown until hashed (Status waits for it: settle).
		p.version, p.served, p.hash, p.print = inst.desc.Version, "", "", print
		p.mu.Unlock()
	}
	startFault(p.name, "handing over")
	return inst, nil
}
