package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/backoff"
)

// Registry is where a supervisor's services go.
type Registry interface {
	Put(services.Provider) error
	RemoveProvider(services.Provider) // only if it still holds its ID
}

// FailedStart says what a start that fails means for a provider.
type FailedStart int

const (
	// Broken: the provider cannot run as it is; it waits for the next Load
	// (a plugin binary that does not start will not start on a retry).
	Broken FailedStart = iota
	// Crash: the failure counts as a crash: retried with backoff, parked
	// after MaxCrashes (an MCP server's command).
	Crash
	// Retry: retried with backoff for ever, its services out of the
	// register meanwhile (an MCP server over HTTP that is down).
	Retry
)

// Options configure a Supervisor. Every duration must be set (the
// configuration has the defaults).
type Options struct {
	ID       string // the provider ID, "plugin:clock"
	Kind     string // for messages: "plugin", "MCP server"
	Name     string // for messages: "clock"
	Registry Registry
	Log      *slog.Logger // already carrying plugin=<name> or mcp=<name>

	StartTimeout time.Duration
	StopGrace    time.Duration // in-flight calls of a replaced child may finish
	Restart      backoff.Backoff
	MaxCrashes   int
	CrashWindow  time.Duration
	FailedStart  FailedStart
	// Lazy: the child runs only while it is used; with a description given
	// to Load, the services are registered without starting it, the first
	// call starts it, and it stops after IdleStop without calls.
	Lazy     bool
	IdleStop time.Duration
	// UnregisterWhileDown takes the services out of the register while a
	// child that died is being restarted (an MCP server); otherwise they stay
	// and calls fail fast until the restart (a plugin, whose restart takes
	// milliseconds). Not for a Lazy provider: a crashed lazy child waits
	// for a call to restart, and a call cannot reach unregistered services.
	UnregisterWhileDown bool
	// HealthInterval, when set, asks a child that has a Health method on
	// this interval; a failed check is handled like a crash.
	HealthInterval time.Duration
}

// Healther is a Child that can say whether it still serves.
type Healther interface {
	Health(ctx context.Context) error
}

// States of a supervised provider.
const (
	StateStarting   = "starting"
	StateRunning    = "running"
	StateIdle       = "idle" // lazy: described, no process
	StateRestarting = "restarting"
	StateParked     = "parked"
	StateBroken     = "broken"
	StateDown       = "down" // Retry: not reachable, retrying
	StateStopped    = "stopped"
)

// Status is a provider's state for `agenthost status` and `plugins`.
type Status struct {
	State     string   `json:"state"`
	Info      Info     `json:"info"`
	Services  []string `json:"services,omitempty"`
	Restarts  int      `json:"restarts"`
	Parks     int      `json:"parks"`
	LastError string   `json:"last_error,omitempty"`
}

// Supervisor runs one provider's children and is that provider in the
// registry: its ID, its services (those of the last description) and its
// calls, which it hands to the running child.
type Supervisor struct {
	o   Options
	log *slog.Logger

	events  chan event
	ctx     context.Context // ends at Stop: a start in progress gives up
	cancel  context.CancelFunc
	done    chan struct{} // closed by the loop when it ends
	settled chan struct{} // closed after the first Load was handled
	wg      sync.WaitGroup

	// trans is held while the registry and the state change together, so
	// that Status never shows a state whose services are not (or no
	// longer) what the registry holds.
	trans sync.Mutex

	mu       sync.Mutex
	start    Starter
	desc     []services.Service // what is registered; nil when nothing is
	cur      *life
	state    string
	restarts int
	outage   int // failed tries since the provider last answered (Retry's backoff)
	parks    int
	crashes  []time.Time
	lastErr  string
	retry    *time.Timer
	starting *startCall // a lazy start in progress
}

type eventKind int

const (
	evLoad eventKind = iota
	evStart
	evExited
	evChanged
	evIdle
	evRestart
	evStop
)

type event struct {
	kind  eventKind
	start Starter
	desc  []services.Service
	life  *life
	why   string
	sc    *startCall
}

type startCall struct {
	done chan struct{}
	err  error
}

// New returns a supervisor with nothing loaded; Load gives it a child to run.
// Stop ends it.
func New(o Options) *Supervisor {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Supervisor{o: o, log: o.Log, events: make(chan event, 16), done: make(chan struct{}), settled: make(chan struct{}), state: StateStarting}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.loop()
	return s
}

// Load makes start the way to run this provider, as at first start or
// after its binary or configuration changed. A running child keeps serving
// until the new one is up and registered. For a lazy supervisor, a non-nil
// desc (from a cache) is registered without starting anything; without one,
// a child is started to describe the services, then stopped.
func (s *Supervisor) Load(start Starter, desc []services.Service) {
	s.send(event{kind: evLoad, start: start, desc: desc})
}

// Settled is closed once the first Load has been handled (started,
// described, or failed), so that a first register can be complete.
func (s *Supervisor) Settled() <-chan struct{} { return s.settled }

// Stop removes the services, lets calls in flight finish within StopGrace
// and ends the child, then returns.
func (s *Supervisor) Stop() {
	s.cancel()
	s.send(event{kind: evStop})
	<-s.done
	s.wg.Wait()
}

func (s *Supervisor) send(e event) bool {
	select {
	case s.events <- e:
		return true
	case <-s.done:
		return false
	}
}

// ID implements services.Provider.
func (s *Supervisor) ID() string { return s.o.ID }

// Services implements services.Provider: the description last registered.
func (s *Supervisor) Services() []services.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]services.Service(nil), s.desc...)
}

// Running returns the child serving now, or nil.
func (s *Supervisor) Running() Child {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	return s.cur.child
}

// HonorsContext implements services.ContextProvider: a child's call and a
// lazy start both end with their context.
func (s *Supervisor) HonorsContext() bool { return true }

// Call implements services.Provider: it runs the call on the current child,
// starting a lazy one first.
func (s *Supervisor) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	l, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(l)
	data, err := l.child.Call(ctx, method, params)
	if err != nil && errors.Is(err, ErrGone) && ctx.Err() == nil {
		// A crash marks the life gone before retiring it; a life retired
		// and not gone was killed on purpose (Stop, or replaced) after
		// its grace.
		if l.isRetired() && !l.isGone() {
			return nil, fmt.Errorf("%s %s was stopped before the call finished (shut down or replaced); try again", s.o.Kind, s.o.Name)
		}
		l.markGone()
		return nil, fmt.Errorf("%s %s crashed during the call; it is being restarted", s.o.Kind, s.o.Name)
	}
	return data, err
}

// acquire returns the running child with one more call on it, starting a
// lazy child when none runs.
func (s *Supervisor) acquire(ctx context.Context) (*life, error) {
	for {
		s.mu.Lock()
		if l := s.cur; l != nil && l.acquire() {
			s.mu.Unlock()
			return l, nil
		}
		state, lastErr := s.state, s.lastErr
		lazy := s.o.Lazy && (state == StateIdle || state == StateRunning)
		if !lazy {
			s.mu.Unlock()
			return nil, s.unavailable(state, lastErr)
		}
		sc, created := s.starting, false
		if sc == nil {
			sc, created = &startCall{done: make(chan struct{})}, true
			s.starting = sc
		}
		s.mu.Unlock()
		if created && !s.send(event{kind: evStart, sc: sc}) {
			return nil, s.unavailable(StateStopped, "")
		}
		select {
		case <-sc.done:
		case <-s.done: // stopped before it got to the start
			return nil, s.unavailable(StateStopped, "")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if sc.err != nil {
			return nil, fmt.Errorf("%s %s could not start: %v", s.o.Kind, s.o.Name, sc.err)
		}
	}
}

// unavailable says why no child can take a call.
func (s *Supervisor) unavailable(state, lastErr string) error {
	switch state {
	case StateRestarting:
		return fmt.Errorf("%s %s crashed and is being restarted; try again in a moment", s.o.Kind, s.o.Name)
	case StateParked:
		return fmt.Errorf("%s %s is parked after crashing repeatedly (%s)", s.o.Kind, s.o.Name, lastErr)
	case StateDown:
		return fmt.Errorf("%s %s is not reachable (%s); retrying", s.o.Kind, s.o.Name, lastErr)
	case StateStopped:
		return fmt.Errorf("%s %s has stopped", s.o.Kind, s.o.Name)
	}
	if lastErr != "" {
		return fmt.Errorf("%s %s is not running: %s", s.o.Kind, s.o.Name, lastErr)
	}
	return fmt.Errorf("%s %s is not running (%s)", s.o.Kind, s.o.Name, state)
}

func (s *Supervisor) release(l *life) {
	if l.release() && s.o.Lazy {
		l.armIdle(s.o.IdleStop, func() { s.send(event{kind: evIdle, life: l}) })
	}
}

// Status reports the provider's state.
func (s *Supervisor) Status() Status {
	s.trans.Lock()
	defer s.trans.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{State: s.state, Restarts: s.restarts, Parks: s.parks, LastError: s.lastErr}
	if s.cur != nil {
		st.Info = s.cur.child.Info()
	}
	for _, svc := range s.desc {
		st.Services = append(st.Services, svc.Name)
	}
	return st
}

func (s *Supervisor) loop() {
	defer close(s.done)
	var once sync.Once
	settle := func() { once.Do(func() { close(s.settled) }) }
	defer settle()
	ctx := s.ctx
	for e := range s.events {
		switch e.kind {
		case evLoad:
			s.load(ctx, e.start, e.desc)
			settle()
		case evStart:
			s.lazyStart(ctx, e.sc)
		case evExited:
			s.crash(e.life, e.why)
		case evChanged:
			s.changed(e.life)
		case evIdle:
			s.idle(e.life)
		case evRestart:
			s.restart(ctx)
		case evStop:
			s.stop()
			return
		}
	}
}

// load handles a new way to start the provider.
func (s *Supervisor) load(ctx context.Context, start Starter, desc []services.Service) {
	s.mu.Lock()
	s.start = start
	if s.state == StateParked || s.state == StateBroken {
		s.crashes = nil
	}
	s.stopRetryLocked()
	s.mu.Unlock()

	if s.o.Lazy && desc != nil {
		s.trans.Lock()
		s.mu.Lock()
		old, state, lastErr := s.cur, s.state, s.lastErr
		s.cur, s.state, s.lastErr = nil, StateIdle, ""
		s.mu.Unlock()
		err := s.register(desc)
		s.trans.Unlock()
		if err == nil {
			s.retire(old, s.o.StopGrace)
			return
		}
		s.mu.Lock()
		s.cur, s.state, s.lastErr = old, state, lastErr
		s.mu.Unlock()
		s.log.Warn("the cached description of a "+s.o.Kind+" was refused; describing it again", "err", err)
	}

	t0 := time.Now()
	child, err := s.startChild(ctx, start)
	var l, old *life
	if err == nil {
		l, old, err = s.install(child)
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopping
		}
		s.mu.Lock()
		serving := s.cur != nil
		s.mu.Unlock()
		if serving {
			s.log.Error("the new version of a "+s.o.Kind+" does not work; the old one keeps serving", "err", err)
			s.setErr(err)
			return
		}
		s.failedStart(err)
		return
	}
	verb := "started"
	if old != nil {
		verb = "reloaded"
	}
	info := child.Info()
	s.log.Info(s.o.Kind+" "+verb, "version", info.Version, "pid", info.PID, "services", names(child.Services()), "took", time.Since(t0).Round(time.Millisecond))
	s.retire(old, s.o.StopGrace)
	if s.o.Lazy {
		if old != nil { // the old one was in use: the new one takes over until idle
			l.armIdle(s.o.IdleStop, func() { s.send(event{kind: evIdle, life: l}) })
			return
		}
		// Started only to be described: stopped now, unless a call got to
		// it first (calls take s.mu to find it), in which case it stays
		// until idle.
		s.mu.Lock()
		unused := s.cur == l && l.idle()
		if unused {
			s.cur, s.state = nil, StateIdle
		}
		s.mu.Unlock()
		if unused {
			s.retire(l, 0)
		} else {
			l.armIdle(s.o.IdleStop, func() { s.send(event{kind: evIdle, life: l}) })
		}
	}
}

// install makes a started child the current one and registers its
// services; on failure the previous child stays current and the new one is
// killed. It returns the new life and the one it replaced.
func (s *Supervisor) install(child Child) (l, old *life, err error) {
	l = newLife(child)
	s.trans.Lock()
	s.mu.Lock()
	old, state, lastErr := s.cur, s.state, s.lastErr
	outage := s.outage
	s.cur, s.state, s.lastErr, s.outage = l, StateRunning, "", 0
	s.mu.Unlock()
	err = s.register(child.Services())
	if err != nil {
		s.mu.Lock()
		s.cur, s.state, s.lastErr, s.outage = old, state, lastErr, outage
		s.mu.Unlock()
	}
	s.trans.Unlock()
	if err != nil {
		child.Kill()
		return nil, nil, fmt.Errorf("its services were refused: %w", err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watch(l)
	}()
	return l, old, nil
}

// lazyStart starts the child a call is waiting for.
func (s *Supervisor) lazyStart(ctx context.Context, sc *startCall) {
	defer func() {
		s.mu.Lock()
		if s.starting == sc {
			s.starting = nil
		}
		s.mu.Unlock()
		close(sc.done)
	}()
	s.mu.Lock()
	running, start, state := s.cur != nil, s.start, s.state
	s.mu.Unlock()
	if running {
		return
	}
	if ctx.Err() != nil { // stopping: start nothing that would be killed at once
		sc.err = s.unavailable(StateStopped, "")
		return
	}
	if start == nil || (state != StateIdle && state != StateRunning) {
		sc.err = s.unavailable(state, s.lastError())
		return
	}
	t0 := time.Now()
	child, err := s.startChild(ctx, start)
	if err != nil {
		sc.err = err
		if ctx.Err() != nil {
			sc.err = s.unavailable(StateStopped, "")
		} else {
			s.crashLoop("start failed: " + err.Error())
		}
		return
	}
	l, _, err := s.install(child)
	if err != nil {
		sc.err = err
		s.fail(err)
		return
	}
	s.log.Debug(s.o.Kind+" started for a call", "pid", child.Info().PID, "took", time.Since(t0).Round(time.Microsecond))
	l.armIdle(s.o.IdleStop, func() { s.send(event{kind: evIdle, life: l}) })
}

func (s *Supervisor) startChild(ctx context.Context, start Starter) (Child, error) {
	if start == nil {
		return nil, errors.New("nothing to start")
	}
	sctx, cancel := context.WithTimeout(ctx, s.o.StartTimeout)
	defer cancel()
	return start(sctx)
}

// register puts desc into the registry as this provider's services.
func (s *Supervisor) register(desc []services.Service) error {
	s.mu.Lock()
	prev := s.desc
	s.desc = append([]services.Service{}, desc...)
	s.mu.Unlock()
	if err := s.o.Registry.Put(s); err != nil {
		s.mu.Lock()
		s.desc = prev
		s.mu.Unlock()
		return err
	}
	return nil
}

// watch reports the child's end, its services' changes and failed health checks.
func (s *Supervisor) watch(l *life) {
	var health <-chan time.Time
	h, ok := l.child.(Healther)
	if ok && s.o.HealthInterval > 0 {
		t := time.NewTicker(s.o.HealthInterval)
		defer t.Stop()
		health = t.C
	}
	for {
		select {
		case <-l.child.Done():
			if !l.isRetired() {
				s.send(event{kind: evExited, life: l, why: "the process exited unexpectedly"})
			}
			return
		case <-l.gone:
			if !l.isRetired() {
				s.send(event{kind: evExited, life: l, why: "it died during a call"})
			}
			return
		case <-l.retired:
			return
		case <-l.child.Changed():
			s.send(event{kind: evChanged, life: l})
		case <-health:
			ctx, cancel := context.WithTimeout(context.Background(), s.o.HealthInterval/2+time.Second)
			err := h.Health(ctx)
			cancel()
			if err != nil && !l.isRetired() {
				s.log.Warn(s.o.Kind+" failed its health check; restarting it", "err", err)
				s.send(event{kind: evExited, life: l, why: "health check failed: " + err.Error()})
				return
			}
		}
	}
}

// crash handles a child that died; an old or retired one is no news.
func (s *Supervisor) crash(l *life, why string) {
	s.mu.Lock()
	if s.cur != l || l.isRetired() {
		s.mu.Unlock()
		return
	}
	s.cur = nil
	s.mu.Unlock()
	l.markGone()
	s.retire(l, 0)
	if s.o.UnregisterWhileDown {
		s.trans.Lock()
		s.o.Registry.RemoveProvider(s)
		s.mu.Lock()
		s.desc = nil
		s.mu.Unlock()
		s.trans.Unlock()
	}
	if s.o.FailedStart == Retry {
		// A server that went away is down, not broken: out of the
		// register until it answers again, retried for ever.
		s.failedStart(errors.New(why))
		return
	}
	s.crashLoop(why)
}

// crashLoop counts a crash (or a failed restart) and either schedules a
// restart with backoff or, after MaxCrashes within CrashWindow, parks the
// provider.
func (s *Supervisor) crashLoop(why string) {
	s.mu.Lock()
	now := time.Now()
	s.crashes = append(s.crashes, now)
	for len(s.crashes) > 0 && now.Sub(s.crashes[0]) > s.o.CrashWindow {
		s.crashes = s.crashes[1:]
	}
	n := len(s.crashes)
	if n >= s.o.MaxCrashes {
		s.parks++
		s.mu.Unlock()
		s.unregister(StateParked, fmt.Sprintf("crashed %d times within %s (last: %s)", n, s.o.CrashWindow, why))
		s.log.Error(s.o.Kind+" keeps crashing; parked and its services removed. Fix it and load it again (install the binary again, or `touch` it, or reload the config) to retry",
			"crashes", n, "window", s.o.CrashWindow)
		return
	}
	wait := s.o.Restart.Delay(n)
	s.state, s.lastErr = StateRestarting, why
	s.stopRetryLocked()
	s.retry = time.AfterFunc(wait, func() { s.send(event{kind: evRestart}) })
	s.mu.Unlock()
	s.log.Warn(s.o.Kind+" crashed; restarting it", "in", wait.Round(time.Millisecond), "crashes", n, "why", why)
}

// failedStart handles a start that failed with no child serving.
func (s *Supervisor) failedStart(err error) {
	switch s.o.FailedStart {
	case Crash:
		s.crashLoop("start failed: " + err.Error())
	case Retry:
		s.unregister(StateDown, err.Error())
		s.mu.Lock()
		s.restarts++
		s.outage++
		wait := s.o.Restart.Delay(min(s.outage, 32))
		s.stopRetryLocked()
		s.retry = time.AfterFunc(wait, func() { s.send(event{kind: evRestart}) })
		s.mu.Unlock()
		s.log.Warn(s.o.Kind+" is not reachable; its services are out of the register until it is", "retry_in", wait.Round(time.Millisecond), "err", err)
	default:
		s.fail(err)
	}
}

// restart runs when a backoff is over.
func (s *Supervisor) restart(ctx context.Context) {
	s.mu.Lock()
	state, start := s.state, s.start
	if state != StateRestarting && state != StateDown {
		s.mu.Unlock()
		return
	}
	if state == StateRestarting {
		s.restarts++
	}
	if s.o.Lazy && state == StateRestarting {
		s.state = StateIdle // the next call starts it
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	child, err := s.startChild(ctx, start)
	if err == nil {
		if _, _, err = s.install(child); err != nil {
			s.fail(err)
			return
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if state == StateDown {
			s.failedStart(err)
		} else {
			s.crashLoop("restart failed: " + err.Error())
		}
		return
	}
	s.log.Info(s.o.Kind+" restarted", "pid", child.Info().PID, "services", names(child.Services()))
}

// changed re-registers a running child's new services.
func (s *Supervisor) changed(l *life) {
	s.mu.Lock()
	current := s.cur == l
	s.mu.Unlock()
	if !current {
		return
	}
	desc := l.child.Services()
	if sameServices(desc, s.Services()) {
		return
	}
	s.trans.Lock()
	err := s.register(desc)
	s.trans.Unlock()
	if err != nil {
		s.log.Error("the "+s.o.Kind+"'s new services were refused; the previous ones stay", "err", err)
		return
	}
	s.log.Info(s.o.Kind+" changed its services", "services", names(desc))
}

// idle stops a lazy child that had no call for IdleStop.
func (s *Supervisor) idle(l *life) {
	s.mu.Lock()
	if s.cur != l || !l.idle() {
		s.mu.Unlock()
		return
	}
	s.cur, s.state = nil, StateIdle
	s.mu.Unlock()
	s.log.Debug(s.o.Kind+" idle; stopped until the next call", "idle_stop", s.o.IdleStop)
	s.retire(l, 0)
}

// fail records a provider that cannot run until the next Load.
func (s *Supervisor) fail(err error) {
	s.unregister(StateBroken, err.Error())
	s.log.Error(s.o.Kind+" cannot run; fix it and load it again to retry", "err", err)
}

func (s *Supervisor) stop() {
	s.mu.Lock()
	cur := s.cur
	s.cur = nil
	s.stopRetryLocked()
	s.mu.Unlock()
	s.unregister(StateStopped, "")
	s.retire(cur, min(s.o.StopGrace, 2*time.Second))
}

// unregister takes the services out of the registry, then records the state
// that explains why, so that whoever sees the state finds them gone.
func (s *Supervisor) unregister(state, why string) {
	s.trans.Lock()
	defer s.trans.Unlock()
	s.o.Registry.RemoveProvider(s)
	s.mu.Lock()
	s.state, s.desc = state, nil
	if why != "" {
		s.lastErr = why
	}
	s.mu.Unlock()
}

// retire stops l once its calls are done (or grace passed), in the
// background; Stop waits for it through wg.
func (s *Supervisor) retire(l *life, grace time.Duration) {
	if l == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		l.retire(grace)
	}()
}

func (s *Supervisor) stopRetryLocked() {
	if s.retry != nil {
		s.retry.Stop()
		s.retry = nil
	}
}

func (s *Supervisor) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

func (s *Supervisor) lastError() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// names lists the services' names for a log line.
func names(desc []services.Service) string {
	var b strings.Builder
	for i, d := range desc {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.Name)
	}
	return b.String()
}

// sameServices compares two descriptions.
func sameServices(a, b []services.Service) bool {
	return reflect.DeepEqual(a, b)
}
