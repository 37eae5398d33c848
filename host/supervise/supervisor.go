package supervise

import (
	"context"
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
	// Hold takes the services out of the set while the provider restarts,
	// keeping their names its own (services.Registry.Hold).
	Hold(services.Provider)
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
	// child that died is being restarted (an MCP server), their names held
	// for it (Registry.Hold) until it is back or parked; otherwise they stay
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

// States are all the states a supervisor can be in (each is a metric's label).
var States = []string{StateStarting, StateRunning, StateIdle, StateRestarting, StateParked, StateBroken, StateDown, StateStopped}

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
	// handled is closed once an evLoad has been handled (or the loop ended).
	handled chan struct{}
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
// a child is started to describe the services, then stopped. The channel is
// closed once this Load has been handled (the new child serves, is
// described, or failed), or at once when the supervisor has stopped.
func (s *Supervisor) Load(start Starter, desc []services.Service) <-chan struct{} {
	handled := make(chan struct{})
	if !s.send(event{kind: evLoad, start: start, desc: desc, handled: handled}) {
		close(handled)
	}
	return handled
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

// Status reports the provider's state. Services the registry holds out
// (they do not fit its configuration) are not listed, and LastError says why.
func (s *Supervisor) Status() Status {
	var heldOut string
	if r, ok := s.o.Registry.(interface{ HeldOut(id string) string }); ok {
		heldOut = r.HeldOut(s.o.ID)
	}
	s.trans.Lock()
	defer s.trans.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{State: s.state, Restarts: s.restarts, Parks: s.parks, LastError: s.lastErr}
	if s.cur != nil {
		st.Info = s.cur.child.Info()
	}
	if heldOut != "" {
		st.LastError = "its services are out of the register: " + heldOut
		return st
	}
	for _, svc := range s.desc {
		st.Services = append(st.Services, svc.Name)
	}
	return st
}

func (s *Supervisor) loop() {
	defer func() { // Loads the loop never got to: their senders must not wait
		for {
			select {
			case e := <-s.events:
				if e.handled != nil {
					close(e.handled)
				}
			default:
				return
			}
		}
	}()
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
			close(e.handled)
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
		if ctx.Err() != nil || errors.Is(err, ErrUnchanged) {
			return // stopping, or nothing new
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
		// it first (calls take s.mu to find it; one may be over already),
		// in which case it stays until idle.
		s.mu.Lock()
		unused := s.cur == l && l.idle() && l.unused()
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
	s.log.Error(s.o.Kind+" cannot run; it is tried again when it or its settings change", "err", err)
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
// that explains why, so that whoever sees the state finds them gone. A
// provider that is down and retried keeps its names (Hold); any other state
// gives them up.
func (s *Supervisor) unregister(state, why string) {
	s.trans.Lock()
	defer s.trans.Unlock()
	if state == StateDown {
		s.o.Registry.Hold(s)
	} else {
		s.o.Registry.RemoveProvider(s)
	}
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
