package pluginmgr

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

type eventKind int

const (
	evChanged eventKind = iota // the binary appeared or changed
	evRemoved                  // the binary is gone
	evCrashed                  // the instance died
	evRestart                  // the backoff after a crash is over
)

type event struct {
	kind eventKind
	inst *instance
}

// Plugin states.
const (
	stateStarting   = "starting"
	stateRunning    = "running"
	stateRestarting = "restarting"
	stateParked     = "parked"
	stateBroken     = "broken" // the binary does not work; waiting for a new one
)

// managed is one plugin (one binary name). Its goroutine handles its events
// one at a time, so a slow start never blocks the other plugins.
//
// Ownership: events is never closed. The loop alone closes done when it
// ends (after a removal, or when quit is closed); the manager alone closes
// quit, once, at shutdown. A send after the loop ended is dropped.
type managed struct {
	m       *Manager
	name    string
	path    string
	events  chan event
	quit    chan struct{}
	done    chan struct{}
	settled chan struct{} // closed after the first start attempt

	mu       sync.Mutex
	inst     *instance
	state    string
	restarts int
	crashes  []time.Time
	lastErr  string
	retry    *time.Timer
}

// newManaged adds a plugin and starts its goroutine; m.mu must be held.
func (m *Manager) newManaged(name, path string) *managed {
	p := &managed{m: m, name: name, path: path, events: make(chan event, 16), quit: make(chan struct{}), done: make(chan struct{}),
		settled: make(chan struct{}), state: stateStarting}
	m.plugins[name] = p
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		p.loop()
	}()
	return p
}

// send hands the loop an event; it reports false, dropping the event, when
// the loop has ended.
func (p *managed) send(e event) bool {
	select {
	case p.events <- e:
		return true
	case <-p.done:
		return false
	}
}

func (p *managed) loop() {
	defer close(p.done)
	var once sync.Once
	settle := func() { once.Do(func() { close(p.settled) }) }
	defer settle()
	for {
		var e event
		select {
		case e = <-p.events:
		case <-p.quit:
			p.stop()
			return
		}
		switch e.kind {
		case evChanged:
			p.reload()
		case evRemoved:
			p.remove()
			return
		case evCrashed:
			p.crash(e.inst)
		case evRestart:
			p.restart()
		}
		settle()
	}
}

// reload starts the binary now in the folder and swaps it in; a binary that
// does not work leaves the running instance serving.
func (p *managed) reload() error {
	hash, err := fileHash(p.path)
	if err != nil {
		p.fail(fmt.Errorf("cannot read %s: %w", p.path, err))
		return errors.New(p.lastError())
	}
	p.mu.Lock()
	cur, state := p.inst, p.state
	p.mu.Unlock()
	if cur != nil && cur.hash == hash && !cur.exited() {
		p.m.log.Debug("plugin binary touched but unchanged; nothing to do", "plugin", p.name)
		return nil
	}
	if pin := p.m.o.sha256[p.name]; pin != "" && !strings.EqualFold(pin, hash) {
		p.fail(fmt.Errorf("binary sha256 %s does not match plugins.sha256.%s (%s); refusing to start it (install the pinned build or update the pin)", hash, p.name, pin))
		return errors.New(p.lastError())
	}
	if state == stateParked {
		p.m.log.Info("parked plugin's binary changed; trying it again", "plugin", p.name)
		p.mu.Lock()
		p.crashes = nil
		p.mu.Unlock()
	}
	start := time.Now()
	inst, err := p.m.start(p.m.ctx, p.name, p.path, hash)
	if err == nil {
		if err = p.m.reg.Put(provider{m: p.m, inst: inst}); err != nil {
			inst.retire(0)
			err = fmt.Errorf("its services were refused: %w", err)
		}
	}
	if err != nil {
		if cur != nil && !cur.exited() {
			p.m.log.Error("the new binary of a plugin does not work; the old instance keeps serving", "plugin", p.name, "err", err)
			p.setErr(err)
			return nil
		}
		p.fail(err)
		return err
	}
	names := make([]string, 0, len(inst.desc.Services))
	for _, s := range inst.desc.Services {
		names = append(names, s.Name)
	}
	p.mu.Lock()
	p.inst, p.state, p.lastErr = inst, stateRunning, ""
	p.mu.Unlock()
	verb := "started"
	if cur != nil {
		verb = "reloaded"
	}
	p.m.log.Info("plugin "+verb, "plugin", p.name, "version", inst.desc.Version, "pid", inst.pid, "services", strings.Join(names, ","), "took", time.Since(start).Round(time.Millisecond))
	if cur != nil {
		p.m.wg.Add(1)
		go func() {
			defer p.m.wg.Done()
			cur.retire(p.m.o.stopGrace)
		}()
	}
	p.m.wg.Add(1)
	go func() {
		defer p.m.wg.Done()
		p.watchExit(inst)
	}()
	return nil
}

// watchExit reports an instance that exits on its own. go-plugin offers no
// exit notification, so it polls, which costs nothing measurable.
func (p *managed) watchExit(i *instance) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		if i.isStopped() {
			return
		}
		if i.exited() {
			p.send(event{kind: evCrashed, inst: i})
			return
		}
		select {
		case <-p.m.ctx.Done():
			return
		default:
		}
	}
}

func (p *managed) crash(i *instance) {
	p.mu.Lock()
	if p.inst != i || i.isStopped() {
		p.mu.Unlock()
		return // an old instance, or already handled
	}
	p.mu.Unlock()
	i.markCrashed()
	i.retire(0)
	p.crashLoop("the process exited unexpectedly")
}

// crashLoop counts a crash (or a failed restart) and either schedules a
// restart with backoff or, after MaxCrashes within CrashWindow, parks the plugin.
func (p *managed) crashLoop(why string) {
	p.mu.Lock()
	now := time.Now()
	p.crashes = append(p.crashes, now)
	for len(p.crashes) > 0 && now.Sub(p.crashes[0]) > p.m.o.crashWindow {
		p.crashes = p.crashes[1:]
	}
	n := len(p.crashes)
	p.mu.Unlock()
	if n >= p.m.o.maxCrashes {
		p.m.reg.Remove("plugin:" + p.name)
		p.mu.Lock()
		p.inst, p.state = nil, stateParked
		p.lastErr = fmt.Sprintf("crashed %d times within %s (last: %s)", n, p.m.o.crashWindow, why)
		p.mu.Unlock()
		p.m.log.Error("plugin keeps crashing; parked and its services removed. Fix it and install the binary again (or `touch` it) to retry",
			"plugin", p.name, "crashes", n, "window", p.m.o.crashWindow)
		return
	}
	wait := p.m.o.restart.Delay(n)
	p.mu.Lock()
	p.state = stateRestarting
	p.lastErr = why
	p.retry = time.AfterFunc(wait, func() { p.send(event{kind: evRestart}) })
	p.mu.Unlock()
	p.m.log.Warn("plugin crashed; restarting it", "plugin", p.name, "in", wait.Round(time.Millisecond), "crashes", n, "why", why)
}

func (p *managed) restart() {
	p.mu.Lock()
	if p.state != stateRestarting {
		p.mu.Unlock()
		return
	}
	p.restarts++
	p.inst = nil // a crashed instance never serves again
	p.mu.Unlock()
	if err := p.reload(); err != nil {
		p.crashLoop("restart failed: " + err.Error()) // e.g. a slow start on a busy Pi: try again later
	}
}

func (p *managed) remove() {
	p.mu.Lock()
	cur := p.inst
	p.inst, p.state = nil, stateBroken
	p.lastErr = "the binary was removed"
	if p.retry != nil {
		p.retry.Stop()
	}
	p.mu.Unlock()
	p.m.reg.Remove("plugin:" + p.name)
	if cur != nil {
		cur.retire(p.m.o.stopGrace)
	}
	p.m.mu.Lock()
	if p.m.plugins[p.name] == p {
		delete(p.m.plugins, p.name)
	}
	p.m.mu.Unlock()
	p.m.log.Info("plugin removed; its services are gone", "plugin", p.name)
}

// stop ends the plugin at shutdown.
func (p *managed) stop() {
	p.mu.Lock()
	cur := p.inst
	p.inst = nil
	if p.retry != nil {
		p.retry.Stop()
	}
	p.mu.Unlock()
	if cur != nil {
		cur.retire(min(p.m.o.stopGrace, 2*time.Second))
	}
}

// fail records a plugin that cannot run; with no instance serving it is broken
// until its binary changes.
func (p *managed) fail(err error) {
	p.mu.Lock()
	serving := p.inst != nil && !p.inst.exited()
	if !serving {
		p.inst, p.state = nil, stateBroken
	}
	p.lastErr = err.Error()
	p.mu.Unlock()
	if !serving {
		p.m.reg.Remove("plugin:" + p.name)
	}
	p.m.log.Error("plugin cannot run; install a working binary to retry", "plugin", p.name, "path", p.path, "err", err)
}

func (p *managed) lastError() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func (p *managed) setErr(err error) {
	p.mu.Lock()
	p.lastErr = err.Error()
	p.mu.Unlock()
}

func (p *managed) status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Status{Name: p.name, Path: p.path, State: p.state, Restarts: p.restarts, LastError: p.lastErr}
	if i := p.inst; i != nil {
		s.Version, s.PID, s.SHA256 = i.desc.Version, i.pid, i.hash
		for _, svc := range i.desc.Services {
			s.Services = append(s.Services, svc.Name)
		}
	}
	return s
}
