package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/backoff"
	"github.com/agenthost/agenthost/proto/voice"
)

// The tests run in a synctest bubble: time is the bubble's own, so a
// backoff, an idle stop or a grace period passes when every goroutine waits,
// and synctest.Wait tells when the supervisor has done all it will do.
// Nothing here depends on how fast the machine is.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const providerID = "plugin:clock"

// lab is one test's world: a real services.Registry that prefixes this
// provider's services with "clock_" (as a configuration may), seen through a
// Registry that records every Put and Remove; and the children the
// Starters made, in order. Everything that happens goes into one log, so
// that a test can assert the order of events.
type lab struct {
	t   *testing.T
	reg *services.Registry

	mu       sync.Mutex
	log      []string
	children []*testChild
	puts     int
	// afterPut, when set, runs once after the next Put reached the
	// registry (on the supervisor's goroutine, as a call from the server
	// that saw the register would race it).
	afterPut func()
	// anyPut lets a Put list services no live child serves (a lazy
	// provider registered from its description).
	anyPut bool
}

func newLab(t *testing.T) *lab {
	return &lab{t: t, reg: services.NewRegistry(services.RegistryOptions{Prefixes: map[string]string{providerID: "clock_"}})}
}

// options are the settings of a plugin's supervisor, with durations long
// enough that only the bubble's clock moves them.
func (l *lab) options() supervise.Options {
	return supervise.Options{ID: providerID, Kind: "plugin", Name: "clock", Registry: l,
		StartTimeout: time.Minute, StopGrace: time.Minute,
		Restart:    backoff.Backoff{Base: time.Second, Cap: 8 * time.Second},
		MaxCrashes: 3, CrashWindow: time.Minute, FailedStart: supervise.Broken}
}

func (l *lab) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf(format, args...))
}

// events returns the log so far.
func (l *lab) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

// Put implements supervise.Registry: it checks that every service listed
// is served by a child that is alive, records the Put and hands it on.
func (l *lab) Put(p services.Provider) error {
	svcs := p.Services()
	names := make([]string, 0, len(svcs))
	for _, s := range svcs {
		names = append(names, s.Name)
	}
	l.mu.Lock()
	l.puts++
	l.log = append(l.log, fmt.Sprintf("put %v", names))
	if !l.anyPut {
		for _, name := range names {
			if !slices.ContainsFunc(l.children, func(c *testChild) bool { return c.alive() && c.serves(name) }) {
				l.t.Errorf("the register got service %q, which no running child serves (log: %q)", name, l.log)
			}
		}
	}
	after := l.afterPut
	l.afterPut = nil
	l.mu.Unlock()
	err := l.reg.Put(p)
	if after != nil {
		after()
	}
	return err
}

// RemoveProvider implements supervise.Registry.
func (l *lab) RemoveProvider(p services.Provider) {
	l.note("remove %s", p.ID())
	l.reg.RemoveProvider(p)
}

// Hold implements supervise.Registry.
func (l *lab) Hold(p services.Provider) {
	l.note("hold %s", p.ID())
	l.reg.Hold(p)
}

func (l *lab) putCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.puts
}

// starts returns how many children were started.
func (l *lab) starts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.children)
}

// child returns the n-th child started (1 is the first).
func (l *lab) child(n int) *testChild {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > len(l.children) {
		l.t.Fatalf("child %d was never started (log: %q)", n, l.log)
	}
	return l.children[n-1]
}

// newChild makes the next child, serving names.
func (l *lab) newChild(names ...string) *testChild {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &testChild{lab: l, n: len(l.children) + 1, done: make(chan struct{}), killed: make(chan struct{})}
	c.setServices(names...)
	l.children = append(l.children, c)
	l.log = append(l.log, fmt.Sprintf("start %d", c.n))
	return c
}

// starter starts a new child serving names each time; setup, when given,
// shapes the child before the supervisor gets it.
func (l *lab) starter(names []string, setup func(*testChild)) supervise.Starter {
	return func(ctx context.Context) (supervise.Child, error) {
		c := l.newChild(names...)
		if setup != nil {
			setup(c)
		}
		return c, nil
	}
}

// registered returns the names in the real registry.
func (l *lab) registered() []string { return l.reg.Names() }

// testChild is a test implementation of supervise.Child, not a fake of an
// external system: an in-memory provider (no process, no connection) whose
// life the test drives. It answers a call with its number and the method it
// got, unless onCall says otherwise; die ends it as a crash would; Kill
// ends it as the supervisor does. Like a real child, a call running when it
// is killed fails with ErrGone.
type testChild struct {
	lab *lab
	n   int

	mu      sync.Mutex
	svcs    []services.Service
	methods []string
	onCall  func(ctx context.Context, c *testChild, method string) (json.RawMessage, error)
	changed chan struct{}

	done     chan struct{}
	endOnce  sync.Once
	killed   chan struct{}
	killOnce sync.Once
}

var _ supervise.Child = (*testChild)(nil)

func (c *testChild) setServices(names ...string) {
	svcs := make([]services.Service, 0, len(names))
	for _, name := range names {
		svcs = append(svcs, services.Service{Name: name, Description: "the test's " + name})
	}
	c.mu.Lock()
	c.svcs = svcs
	c.mu.Unlock()
}

func (c *testChild) serves(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.svcs, func(s services.Service) bool { return s.Name == name })
}

// Services implements supervise.Child.
func (c *testChild) Services() []services.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.svcs)
}

// Call implements supervise.Child.
func (c *testChild) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	c.methods = append(c.methods, method)
	onCall := c.onCall
	c.mu.Unlock()
	if onCall != nil {
		return onCall(ctx, c, method)
	}
	if !c.serves(method) {
		return nil, fmt.Errorf("child %d has no service %q", c.n, method)
	}
	return c.answer(method), nil
}

func (c *testChild) answer(method string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"child":%d,"method":%q}`, c.n, method))
}

// calls returns the methods the child was called with.
func (c *testChild) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.methods)
}

// Done implements supervise.Child.
func (c *testChild) Done() <-chan struct{} { return c.done }

// Changed implements supervise.Child.
func (c *testChild) Changed() <-chan struct{} { return c.changed }

// Kill implements supervise.Child.
func (c *testChild) Kill() {
	c.killOnce.Do(func() {
		c.lab.note("kill %d", c.n)
		close(c.killed)
		c.end()
	})
}

// Info implements supervise.Child.
func (c *testChild) Info() supervise.Info {
	return supervise.Info{PID: 1000 + c.n, Version: fmt.Sprintf("v%d", c.n), Transport: "test"}
}

// die ends the child on its own, as a process that crashed.
func (c *testChild) die() {
	c.lab.note("die %d", c.n)
	c.end()
}

func (c *testChild) end() { c.endOnce.Do(func() { close(c.done) }) }

func (c *testChild) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *testChild) isKilled() bool {
	select {
	case <-c.killed:
		return true
	default:
		return false
	}
}

// healthChild is a testChild that also implements supervise.Healther; its
// check fails once sick is set.
type healthChild struct {
	*testChild
	sick   chan struct{}
	checks chan bool // one value per check: whether its ctx had a deadline
}

// Health implements supervise.Healther.
func (h *healthChild) Health(ctx context.Context) error {
	_, ok := ctx.Deadline()
	select {
	case h.checks <- ok:
	default:
	}
	select {
	case <-h.sick:
		return errors.New("the health RPC failed: not serving")
	default:
		return nil
	}
}

// blockingCall makes a child's calls wait for release (or the child's
// kill, then ErrGone, or the call's ctx); entered receives the method
// when a call has started.
func blockingCall(entered chan<- string, release <-chan struct{}) func(context.Context, *testChild, string) (json.RawMessage, error) {
	return func(ctx context.Context, c *testChild, method string) (json.RawMessage, error) {
		entered <- method
		select {
		case <-release:
			c.lab.note("return %d", c.n)
			return c.answer(method), nil
		case <-c.killed:
			c.lab.note("gone %d", c.n)
			return nil, fmt.Errorf("child %d: %w", c.n, supervise.ErrGone)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// settle waits for the first Load to be handled.
func settle(t *testing.T, s *supervise.Supervisor) {
	t.Helper()
	select {
	case <-s.Settled():
	case <-time.After(time.Hour):
		t.Fatal("Settled did not close after the first Load")
	}
	synctest.Wait()
}

// call runs a call under a deadline that only a stuck call reaches.
func call(s *supervise.Supervisor, method string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	return s.Call(ctx, method, json.RawMessage(`{}`))
}

// callAsync runs call in a goroutine; the result arrives on the channel.
func callAsync(s *supervise.Supervisor, method string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		data, err := call(s, method)
		ch <- result{data, err}
	}()
	return ch
}

type result struct {
	data json.RawMessage
	err  error
}

// answeredBy checks that a call succeeded on child n.
func answeredBy(t *testing.T, what string, data json.RawMessage, err error, n int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var got struct{ Child int }
	if e := json.Unmarshal(data, &got); e != nil || got.Child != n {
		t.Fatalf("%s: answered %s, want an answer from child %d", what, data, n)
	}
}

// errorSays checks that err is set and contains every part.
func errorSays(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one saying %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not say %q", what, err, p)
		}
	}
}

// before checks that event a is in the log before event b.
func before(t *testing.T, log []string, a, b string) {
	t.Helper()
	i, j := slices.Index(log, a), slices.Index(log, b)
	if i < 0 || j < 0 || i > j {
		t.Fatalf("want %q before %q in the log %q", a, b, log)
	}
}

func wantState(t *testing.T, s *supervise.Supervisor, state string) supervise.Status {
	t.Helper()
	st := s.Status()
	if st.State != state {
		t.Fatalf("state %q (last error %q), want %q", st.State, st.LastError, state)
	}
	return st
}

func wantRegistered(t *testing.T, l *lab, names ...string) {
	t.Helper()
	if got := l.registered(); !slices.Equal(got, names) {
		t.Fatalf("registered %q, want %q", got, names)
	}
}

func TestLoadRegistersOnceAndCallsReachTheChildByTheUnprefixedName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		s.Load(l.starter([]string{"now", "today"}, nil), nil)
		settle(t, s)

		if n := l.putCount(); n != 1 {
			t.Fatalf("%d Puts for one Load, want 1 (log %q)", n, l.events())
		}
		wantRegistered(t, l, "clock_now", "clock_today")
		st := wantState(t, s, supervise.StateRunning)
		if st.Info.PID != 1001 || !slices.Equal(st.Services, []string{"now", "today"}) {
			t.Fatalf("status %+v, want the child's PID 1001 and its services", st)
		}

		// Through the real dispatcher, by the registered (prefixed) name.
		d := services.NewDispatcher(l.reg, services.DispatchOptions{})
		out := d.Dispatch(context.Background(), voice.Call{CallID: "c1", Method: "clock_now", Params: json.RawMessage(`{}`)})
		if !out.Success {
			t.Fatalf("dispatching clock_now: %s", out.Error)
		}
		answeredBy(t, "clock_now", out.Data, nil, 1)
		data, err := call(s, "today")
		answeredBy(t, "today", data, err, 1)
		if got := l.child(1).calls(); !slices.Equal(got, []string{"now", "today"}) {
			t.Fatalf("the child got the methods %q, want the unprefixed names", got)
		}
		if l.starts() != 1 || l.putCount() != 1 {
			t.Fatalf("calls started or registered again: log %q", l.events())
		}
	})
}

func TestHotReloadRegistersTheNewChildBeforeRetiringTheOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		entered, release := make(chan string, 1), make(chan struct{})
		s.Load(l.starter([]string{"now", "old_only"}, func(c *testChild) { c.onCall = blockingCall(entered, release) }), nil)
		settle(t, s)
		inFlight := callAsync(s, "old_only")
		<-entered

		s.Load(l.starter([]string{"now", "new_only"}, nil), nil)
		synctest.Wait()

		log := l.events()
		before(t, log, "start 2", "put [now new_only]")
		if l.child(1).isKilled() {
			t.Fatalf("the old child was killed while a call ran on it: %q", log)
		}
		wantRegistered(t, l, "clock_new_only", "clock_now")
		data, err := call(s, "now")
		answeredBy(t, "a call after the reload", data, err, 2)

		close(release)
		r := <-inFlight
		answeredBy(t, "the call in flight during the reload", r.data, r.err, 1)
		synctest.Wait()
		if !l.child(1).isKilled() {
			t.Fatalf("the old child was not killed after its last call: %q", l.events())
		}
		log = l.events()
		before(t, log, "put [now new_only]", "return 1")
		before(t, log, "return 1", "kill 1")
		if l.child(2).isKilled() {
			t.Fatalf("the new child was killed: %q", log)
		}
		st := wantState(t, s, supervise.StateRunning)
		if st.Info.PID != 1002 || st.LastError != "" {
			t.Fatalf("status %+v, want child 2 running and no error", st)
		}
	})
}

func TestHotReloadWhoseStartFailsKeepsTheOldChildServing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		s.Load(l.starter([]string{"now"}, nil), nil)
		settle(t, s)

		s.Load(func(context.Context) (supervise.Child, error) {
			return nil, errors.New("the new binary is not executable; chmod +x it")
		}, nil)
		synctest.Wait()

		st := wantState(t, s, supervise.StateRunning)
		if !strings.Contains(st.LastError, "chmod +x") {
			t.Fatalf("last error %q, want the failed start's reason", st.LastError)
		}
		wantRegistered(t, l, "clock_now")
		data, err := call(s, "now")
		answeredBy(t, "a call after the failed reload", data, err, 1)
		if l.child(1).isKilled() {
			t.Fatal("the old child was killed although the new one never started")
		}
	})
}

func TestRefusedServicesBreakTheProviderAndKillTheChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		l.anyPut = true
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		s.Load(l.starter([]string{"what time"}, nil), nil)
		settle(t, s)

		st := wantState(t, s, supervise.StateBroken)
		if !strings.Contains(st.LastError, "refused") || !strings.Contains(st.LastError, "what time") {
			t.Fatalf("last error %q, want it to say which service was refused", st.LastError)
		}
		if !l.child(1).isKilled() {
			t.Fatal("the child whose services were refused still runs")
		}
		wantRegistered(t, l)
		_, err := call(s, "what time")
		errorSays(t, "a call to a broken provider", err, "plugin clock is not running", "refused")
	})
}

func TestCrashedChildIsRestartedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		o := l.options()
		o.MaxCrashes = 10
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		s.Load(l.starter([]string{"now"}, nil), nil)
		settle(t, s)

		l.child(1).die()
		synctest.Wait()
		st := wantState(t, s, supervise.StateRestarting)
		if !strings.Contains(st.LastError, "exited unexpectedly") {
			t.Fatalf("last error %q, want the reason of the restart", st.LastError)
		}
		if !l.child(1).isKilled() {
			t.Fatal("the dead child was not killed (its resources released)")
		}
		if l.starts() != 1 {
			t.Fatalf("restarted at once, without a backoff: %q", l.events())
		}
		// A plugin's services stay while it restarts; calls fail fast.
		wantRegistered(t, l, "clock_now")
		_, err := call(s, "now")
		errorSays(t, "a call during the restart", err, "crashed and is being restarted", "try again")

		time.Sleep(o.Restart.Cap) // past the first delay, whatever its jitter
		synctest.Wait()
		st = wantState(t, s, supervise.StateRunning)
		if l.starts() != 2 || st.Restarts != 1 || st.LastError != "" {
			t.Fatalf("after the backoff: %d starts, status %+v; want child 2 running, 1 restart", l.starts(), st)
		}
		data, err := call(s, "now")
		answeredBy(t, "a call after the restart", data, err, 2)

		// The second crash waits about twice as long: 2s ±20%.
		l.child(2).die()
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if l.starts() != 2 {
			t.Fatalf("the second restart came before its (doubled) backoff: %q", l.events())
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := wantState(t, s, supervise.StateRunning); l.starts() != 3 || st.Restarts != 2 {
			t.Fatalf("after the second backoff: %d starts, status %+v", l.starts(), st)
		}
	})
}

func TestChildThatKeepsDyingIsParkedWithItsLastError(t *testing.T) {
	for _, unregister := range []bool{false, true} {
		t.Run(fmt.Sprintf("UnregisterWhileDown=%v", unregister), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLab(t)
				o := l.options()
				o.UnregisterWhileDown = unregister
				s := supervise.New(o)
				t.Cleanup(s.Stop)
				s.Load(l.starter([]string{"now"}, nil), nil)
				settle(t, s)

				for n := 1; n <= o.MaxCrashes; n++ {
					wantState(t, s, supervise.StateRunning)
					wantRegistered(t, l, "clock_now")
					l.child(n).die()
					synctest.Wait()
					if n == o.MaxCrashes {
						break
					}
					wantState(t, s, supervise.StateRestarting)
					if unregister {
						wantRegistered(t, l)
					} else {
						wantRegistered(t, l, "clock_now")
					}
					time.Sleep(o.Restart.Cap)
					synctest.Wait()
				}

				st := wantState(t, s, supervise.StateParked)
				if st.Parks != 1 || !strings.Contains(st.LastError, "crashed 3 times within 1m0s") || !strings.Contains(st.LastError, "exited unexpectedly") {
					t.Fatalf("status %+v, want 1 park and the crashes and their last reason in the error", st)
				}
				wantRegistered(t, l)
				_, err := call(s, "now")
				errorSays(t, "a call to a parked plugin", err, "parked after crashing repeatedly", "exited unexpectedly")

				time.Sleep(time.Hour)
				synctest.Wait()
				if l.starts() != o.MaxCrashes {
					t.Fatalf("a parked plugin was started again without a Load: %q", l.events())
				}

				// A new Load (the binary was fixed) tries again.
				s.Load(l.starter([]string{"now"}, nil), nil)
				synctest.Wait()
				wantState(t, s, supervise.StateRunning)
				wantRegistered(t, l, "clock_now")
				data, err := call(s, "now")
				answeredBy(t, "a call after the parked plugin was loaded again", data, err, o.MaxCrashes+1)
			})
		})
	}
}

func TestStartThatKeepsFailingIsRetriedThenParked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		o := l.options()
		o.Kind, o.Name, o.FailedStart, o.UnregisterWhileDown = "MCP server", "clock", supervise.Crash, true
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		var tries atomic.Int32
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			tries.Add(1)
			return nil, fmt.Errorf("command %q not found; install it or fix mcp.servers.clock.command", "clockd")
		}, nil)
		settle(t, s)
		wantState(t, s, supervise.StateRestarting)

		time.Sleep(time.Hour)
		synctest.Wait()
		st := wantState(t, s, supervise.StateParked)
		if n := int(tries.Load()); n != o.MaxCrashes {
			t.Fatalf("the start was tried %d times, want %d (MaxCrashes)", n, o.MaxCrashes)
		}
		if !strings.Contains(st.LastError, "crashed 3 times") || !strings.Contains(st.LastError, "install it or fix mcp.servers.clock.command") {
			t.Fatalf("last error %q, want the count and the start's own reason", st.LastError)
		}
		wantRegistered(t, l)
		_, err := call(s, "now")
		errorSays(t, "a call to a parked server", err, "MCP server clock is parked", "install it or fix")
	})
}

func TestCallThatFindsTheChildGoneIsACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		first := true
		s.Load(l.starter([]string{"now"}, func(c *testChild) {
			if !first {
				return
			}
			first = false
			c.onCall = func(context.Context, *testChild, string) (json.RawMessage, error) {
				return nil, fmt.Errorf("reading the reply: broken pipe: %w", supervise.ErrGone)
			}
		}), nil)
		settle(t, s)

		_, err := call(s, "now")
		errorSays(t, "the call that found the child gone", err, "plugin clock crashed during the call", "being restarted")
		synctest.Wait()
		st := wantState(t, s, supervise.StateRestarting)
		if !strings.Contains(st.LastError, "died during a call") {
			t.Fatalf("last error %q, want the reason", st.LastError)
		}
		if !l.child(1).isKilled() {
			t.Fatal("the gone child was not killed")
		}

		time.Sleep(l.options().Restart.Cap)
		synctest.Wait()
		data, err := call(s, "now")
		answeredBy(t, "a call after the restart", data, err, 2)
		if st := s.Status(); st.Restarts != 1 {
			t.Fatalf("%d restarts, want 1", st.Restarts)
		}
	})
}

func TestCallCancelledByItsCallerIsNotACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		entered := make(chan struct{})
		s.Load(l.starter([]string{"now"}, func(c *testChild) {
			// A child whose connection reports a cancelled call as broken.
			c.onCall = func(ctx context.Context, c *testChild, method string) (json.RawMessage, error) {
				close(entered)
				<-ctx.Done()
				return nil, fmt.Errorf("stream reset: %w", supervise.ErrGone)
			}
		}), nil)
		settle(t, s)

		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := s.Call(ctx, "now", nil)
			errc <- err
		}()
		<-entered
		cancel()
		if err := <-errc; !errors.Is(err, supervise.ErrGone) {
			t.Fatalf("the cancelled call returned %v, want the child's own error", err)
		}
		synctest.Wait()
		wantState(t, s, supervise.StateRunning)
		if l.child(1).isKilled() || l.starts() != 1 {
			t.Fatalf("a call its caller cancelled was taken for a crash: %q", l.events())
		}
	})
}

func TestLazyRegistersFromTheDescriptionStartsOnTheFirstCallAndStopsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		l.anyPut = true
		o := l.options()
		o.Lazy, o.IdleStop = true, 30*time.Second
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		desc := []services.Service{{Name: "now", Description: "the test's now"}}
		s.Load(l.starter([]string{"now"}, nil), desc)
		settle(t, s)

		if l.starts() != 0 {
			t.Fatalf("a lazy provider with a description was started at Load: %q", l.events())
		}
		wantRegistered(t, l, "clock_now")
		wantState(t, s, supervise.StateIdle)

		data, err := call(s, "now")
		answeredBy(t, "the first call", data, err, 1)
		wantState(t, s, supervise.StateRunning)

		// A call within IdleStop keeps the child.
		time.Sleep(o.IdleStop - time.Second)
		synctest.Wait()
		data, err = call(s, "now")
		answeredBy(t, "a call within the idle time", data, err, 1)
		time.Sleep(o.IdleStop - time.Second)
		synctest.Wait()
		if l.child(1).isKilled() {
			t.Fatalf("the child was stopped although a call came within IdleStop: %q", l.events())
		}

		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !l.child(1).isKilled() {
			t.Fatalf("the child was not stopped after IdleStop without calls: %q", l.events())
		}
		wantState(t, s, supervise.StateIdle)
		wantRegistered(t, l, "clock_now")

		data, err = call(s, "now")
		answeredBy(t, "a call after the idle stop", data, err, 2)
		if l.starts() != 2 {
			t.Fatalf("%d starts, want 2: %q", l.starts(), l.events())
		}
	})
}

func TestLazyConcurrentFirstCallsStartOneChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		l.anyPut = true
		o := l.options()
		o.Lazy, o.IdleStop = true, time.Minute
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		gate := make(chan struct{})
		start := l.starter([]string{"now"}, nil)
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			<-gate // a slow start: every call arrives while it runs
			return start(ctx)
		}, []services.Service{{Name: "now"}})
		settle(t, s)

		const n = 8
		results := make([]<-chan result, n)
		for i := range results {
			results[i] = callAsync(s, "now")
		}
		synctest.Wait() // every call waits for the one start
		close(gate)
		for i, r := range results {
			r := <-r
			answeredBy(t, fmt.Sprintf("call %d", i), r.data, r.err, 1)
		}
		if l.starts() != 1 {
			t.Fatalf("%d concurrent first calls started %d children, want 1: %q", n, l.starts(), l.events())
		}
		if got := len(l.child(1).calls()); got != n {
			t.Fatalf("the child got %d calls, want %d", got, n)
		}
	})
}

func TestLazyWithoutDescriptionStartsToDescribeThenStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		o := l.options()
		o.Lazy, o.IdleStop = true, time.Minute
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		s.Load(l.starter([]string{"now"}, nil), nil)
		settle(t, s)

		if l.starts() != 1 || !l.child(1).isKilled() {
			t.Fatalf("want one child started to describe the services, then stopped: %q", l.events())
		}
		wantState(t, s, supervise.StateIdle)
		wantRegistered(t, l, "clock_now")
		data, err := call(s, "now")
		answeredBy(t, "the first call", data, err, 2)
	})
}

func TestServicesChangeReregistersOnlyWhenTheSetChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		s.Load(l.starter([]string{"now"}, func(c *testChild) { c.changed = make(chan struct{}) }), nil)
		settle(t, s)
		c := l.child(1)

		c.changed <- struct{}{} // the same set
		synctest.Wait()
		if n := l.putCount(); n != 1 {
			t.Fatalf("an unchanged set was registered again: %q", l.events())
		}

		c.setServices("now", "today")
		c.changed <- struct{}{}
		synctest.Wait()
		if n := l.putCount(); n != 2 {
			t.Fatalf("%d Puts after the set changed, want 2: %q", n, l.events())
		}
		wantRegistered(t, l, "clock_now", "clock_today")
		if st := s.Status(); !slices.Equal(st.Services, []string{"now", "today"}) {
			t.Fatalf("status lists %q, want the new set", st.Services)
		}
		data, err := call(s, "today")
		answeredBy(t, "a call to the new service", data, err, 1)

		c.setServices("today")
		c.changed <- struct{}{}
		synctest.Wait()
		wantRegistered(t, l, "clock_today")
		if n := l.putCount(); n != 3 {
			t.Fatalf("%d Puts, want 3: %q", n, l.events())
		}
	})
}

func TestStopLetsTheCallFinishKillsTheChildAndLaterCallsFail(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		entered, release := make(chan string, 1), make(chan struct{})
		s.Load(l.starter([]string{"now"}, func(c *testChild) { c.onCall = blockingCall(entered, release) }), nil)
		settle(t, s)
		inFlight := callAsync(s, "now")
		<-entered

		stopped := make(chan struct{})
		go func() {
			s.Stop()
			close(stopped)
		}()
		synctest.Wait()
		wantState(t, s, supervise.StateStopped)
		wantRegistered(t, l)
		if l.child(1).isKilled() {
			t.Fatal("Stop killed the child while a call ran, before its grace")
		}
		_, err := call(s, "now")
		errorSays(t, "a call during Stop", err, "plugin clock has stopped")

		close(release)
		r := <-inFlight
		answeredBy(t, "the call in flight at Stop", r.data, r.err, 1)
		<-stopped
		if !l.child(1).isKilled() {
			t.Fatal("the child runs after Stop returned")
		}
		before(t, l.events(), "return 1", "kill 1")

		_, err = call(s, "now")
		errorSays(t, "a call after Stop", err, "plugin clock has stopped")
		s.Load(l.starter([]string{"now"}, nil), nil)
		synctest.Wait()
		if l.starts() != 1 {
			t.Fatalf("a Load after Stop started a child: %q", l.events())
		}
		s.Stop() // a second Stop returns too
	})
}

func TestStopKillsAHungCallAfterItsGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		entered := make(chan string, 1)
		s.Load(l.starter([]string{"now"}, func(c *testChild) { c.onCall = blockingCall(entered, nil) }), nil)
		settle(t, s)
		inFlight := callAsync(s, "now")
		<-entered

		s.Stop()
		if !l.child(1).isKilled() {
			t.Fatal("the child runs after Stop returned")
		}
		r := <-inFlight
		if r.err == nil {
			t.Fatalf("the hung call killed by Stop answered %s", r.data)
		}
	})
}

func TestFailedHealthCheckRestartsTheChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		o := l.options()
		o.HealthInterval = 10 * time.Second
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		kids := make(chan *healthChild, 8)
		start := l.starter([]string{"now"}, nil)
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			c, _ := start(ctx)
			h := &healthChild{testChild: c.(*testChild), sick: make(chan struct{}), checks: make(chan bool, 100)}
			kids <- h
			return h, nil
		}, nil)
		settle(t, s)

		first := <-kids
		time.Sleep(5 * o.HealthInterval) // healthy checks change nothing
		synctest.Wait()
		if n := len(first.checks); n < 4 {
			t.Fatalf("%d health checks in 5 intervals", n)
		}
		if !<-first.checks {
			t.Fatal("a health check ran without a deadline")
		}
		if l.starts() != 1 || l.child(1).isKilled() {
			t.Fatalf("a healthy child was restarted: %q", l.events())
		}

		close(first.sick)
		time.Sleep(o.HealthInterval)
		synctest.Wait()
		st := wantState(t, s, supervise.StateRestarting)
		if !strings.Contains(st.LastError, "health check failed: the health RPC failed") {
			t.Fatalf("last error %q, want the failed check", st.LastError)
		}
		if !l.child(1).isKilled() {
			t.Fatal("the child that failed its health check was not killed")
		}
		time.Sleep(o.Restart.Cap)
		synctest.Wait()
		wantState(t, s, supervise.StateRunning)
		data, err := call(s, "now")
		answeredBy(t, "a call after the restart", data, err, 2)
	})
}

func TestStopDuringASlowStartReturnsAndLeavesNoChild(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		o := l.options()
		o.StartTimeout = time.Hour
		s := supervise.New(o)
		var why error
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			c := l.newChild("now") // the process runs; its handshake never comes
			<-ctx.Done()
			why = ctx.Err()
			c.Kill()
			return nil, fmt.Errorf("starting: %w", ctx.Err())
		}, nil)
		synctest.Wait()

		s.Stop()
		if !errors.Is(why, context.Canceled) {
			t.Fatalf("the start ended with %v, want it cancelled by Stop (not its timeout)", why)
		}
		if !l.child(1).isKilled() {
			t.Fatal("the half-started child runs after Stop")
		}
		select {
		case <-s.Settled():
		default:
			t.Fatal("Settled is not closed after Stop")
		}
		wantState(t, s, supervise.StateStopped)
		wantRegistered(t, l)
	})
}

func TestStopKillsAChildWhoseStartFinishedAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			c := l.newChild("now")
			<-ctx.Done() // it comes up just as Stop cancels the start
			return c, nil
		}, nil)
		synctest.Wait()

		s.Stop()
		if !l.child(1).isKilled() {
			t.Fatalf("a child whose start finished after Stop runs: %q", l.events())
		}
		wantState(t, s, supervise.StateStopped)
		wantRegistered(t, l)
	})
}

// flakyServer is an MCP server over HTTP as the supervisor sees it: down
// (its start fails: connection refused) until up is set.
type flakyServer struct {
	up    atomic.Bool
	tries atomic.Int32
}

// httpServer loads a flakyServer, down, under the Retry policy of an MCP
// server over HTTP.
func (l *lab) httpServer(t *testing.T) (*supervise.Supervisor, supervise.Options, *flakyServer) {
	o := l.options()
	o.Kind, o.FailedStart, o.UnregisterWhileDown = "MCP server", supervise.Retry, true
	s := supervise.New(o)
	t.Cleanup(s.Stop)
	srv := &flakyServer{}
	start := l.starter([]string{"now"}, nil)
	s.Load(func(ctx context.Context) (supervise.Child, error) {
		srv.tries.Add(1)
		if !srv.up.Load() {
			return nil, errors.New("connecting to http://127.0.0.1:9/mcp: connection refused")
		}
		return start(ctx)
	}, nil)
	settle(t, s)
	return s, o, srv
}

func TestUnreachableServerIsRetriedForEverOutOfTheRegister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s, o, srv := l.httpServer(t)
		st := wantState(t, s, supervise.StateDown)
		if !strings.Contains(st.LastError, "connection refused") {
			t.Fatalf("last error %q, want why it is down", st.LastError)
		}
		wantRegistered(t, l)
		_, err := call(s, "now")
		errorSays(t, "a call to a server that is down", err, "MCP server clock is not reachable", "connection refused", "retrying")

		time.Sleep(time.Hour)
		synctest.Wait()
		wantState(t, s, supervise.StateDown) // never parked
		if n := int(srv.tries.Load()); n <= o.MaxCrashes {
			t.Fatalf("tried %d times in an hour, want more than MaxCrashes (%d): it retries for ever", n, o.MaxCrashes)
		}

		srv.up.Store(true)
		time.Sleep(o.Restart.Cap * 2)
		synctest.Wait()
		wantState(t, s, supervise.StateRunning)
		wantRegistered(t, l, "clock_now")
		data, err := call(s, "now")
		answeredBy(t, "a call once the server answers", data, err, 1)

		// It goes away again: out of the register, down, retried.
		srv.up.Store(false)
		l.child(1).die()
		synctest.Wait()
		wantState(t, s, supervise.StateDown)
		wantRegistered(t, l)
	})
}

func TestCallDuringStopOfALazyProviderGetsAClearError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		l.anyPut = true
		o := l.options()
		o.Lazy, o.IdleStop = true, time.Minute
		s := supervise.New(o)
		s.Load(l.starter([]string{"now"}, nil), []services.Service{{Name: "now"}})
		settle(t, s)

		// A new binary without a cached description: the supervisor starts
		// it to describe it. Cancelled, the start ends after a second (the
		// half-started process takes that long to die).
		entered := make(chan struct{})
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			close(entered)
			<-ctx.Done()
			time.Sleep(time.Second)
			return nil, ctx.Err()
		}, nil)
		<-entered
		stopped := make(chan struct{})
		go func() {
			s.Stop()
			close(stopped)
		}()
		synctest.Wait() // Stop has cancelled the start and waits for the supervisor

		r := <-callAsync(s, "now")
		<-stopped
		if r.err == nil || errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("a call made while Stop ran got (%s, %v); want at once an error saying the plugin stopped, not a wait for the call's deadline", r.data, r.err)
		}
	})
}

func TestCallsThatFindTheChildGoneReturnByTheirDeadlineWhileTheSupervisorIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		t.Cleanup(s.Stop)
		entered, broken := make(chan string, 64), make(chan struct{})
		s.Load(l.starter([]string{"now"}, func(c *testChild) {
			c.onCall = func(ctx context.Context, c *testChild, method string) (json.RawMessage, error) {
				entered <- method
				select {
				case <-broken:
					return nil, fmt.Errorf("child %d: %w", c.n, supervise.ErrGone)
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}), nil)
		settle(t, s)

		const n, deadline = 20, 10 * time.Second // the dispatcher's default deadline
		results := make(chan error, n)
		for range n {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				_, err := s.Call(ctx, "now", nil)
				results <- err
			}()
			<-entered
		}
		// A new version loads; its start takes up to StartTimeout (a minute).
		s.Load(func(ctx context.Context) (supervise.Child, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, nil)
		synctest.Wait()
		close(broken) // the old child's process dies under its calls

		time.Sleep(deadline + time.Second)
		synctest.Wait()
		if got := len(results); got != n {
			t.Fatalf("%d of %d calls were still running a second after their deadline (Supervisor.HonorsContext says a call ends with its context)", n-got, n)
		}
	})
}

func TestCallKilledByStopIsNotToldThePluginIsRestarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s := supervise.New(l.options())
		entered := make(chan string, 1)
		s.Load(l.starter([]string{"now"}, func(c *testChild) { c.onCall = blockingCall(entered, nil) }), nil)
		settle(t, s)
		inFlight := callAsync(s, "now")
		<-entered

		s.Stop() // the call is still running when the grace ends
		r := <-inFlight
		if r.err == nil || strings.Contains(r.err.Error(), "restart") {
			t.Fatalf("a call ended by Stop got (%s, %v); want an error saying the plugin stopped, not that it is being restarted", r.data, r.err)
		}
	})
}

func TestServerBackFromALongOutageIsRetriedSoonAfterItsNextDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		s, o, srv := l.httpServer(t)
		time.Sleep(time.Hour) // retries have reached the cap (8 s)
		srv.up.Store(true)
		time.Sleep(o.Restart.Cap * 2)
		synctest.Wait()
		wantState(t, s, supervise.StateRunning)

		// Up for a day, then it drops: the first retry comes after about
		// Base (1 s ±20%), not after the cap the old outage had reached.
		time.Sleep(24 * time.Hour)
		srv.up.Store(false)
		before := srv.tries.Load()
		l.child(1).die()
		synctest.Wait()
		time.Sleep(o.Restart.Base * 3 / 2)
		synctest.Wait()
		if srv.tries.Load() == before {
			t.Fatalf("no retry %s after the server dropped: the backoff kept growing from the earlier outage", o.Restart.Base*3/2)
		}
	})
}

// TestEventsForAStoppedSupervisorAreDropped is issue 11's defect 5 where it
// lives now: events about a provider that has stopped (its child dies, a
// Load comes, its idle timer fires) are dropped, neither panicking on a
// closed channel nor blocking their sender. The events channel is never
// closed; senders give up when the loop's done channel is.
func TestEventsForAStoppedSupervisorAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		l.anyPut = true
		o := l.options()
		o.Lazy, o.IdleStop = true, time.Minute
		s := supervise.New(o)
		s.Load(l.starter([]string{"now"}, nil), []services.Service{{Name: "now"}})
		settle(t, s)
		if _, err := call(s, "now"); err != nil { // starts child 1 and arms its idle timer
			t.Fatal(err)
		}
		s.Stop()
		l.child(1).die()
		for range 40 { // more senders than the events buffer holds
			s.Load(l.starter([]string{"now"}, nil), nil)
		}
		time.Sleep(2 * o.IdleStop) // the idle timer would fire after Stop
		synctest.Wait()            // every sender has returned: nothing blocks in the bubble
		if l.starts() != 1 {
			t.Fatalf("events after Stop started children: %q", l.events())
		}
	})
}

// TestAStoppingSupervisorLeavesItsSuccessorsServices: a reload that
// changes how a provider runs (an MCP server from command to url) stops
// the old supervisor in the background and starts a new one under the
// same ID; when the old one's Stop comes last, it must not take the new
// one's services out of the register (found by review).
func TestAStoppingSupervisorLeavesItsSuccessorsServices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		old := supervise.New(l.options())
		old.Load(l.starter([]string{"now"}, nil), nil)
		settle(t, old)
		successor := supervise.New(l.options())
		successor.Load(l.starter([]string{"now"}, nil), nil)
		settle(t, successor)
		old.Stop()
		synctest.Wait()
		if got := l.registered(); !slices.Contains(got, "clock_now") {
			t.Errorf("after the old supervisor stopped the register holds %q, want its successor's clock_now (log: %q)", got, l.events())
		}
		if _, err := call(successor, "now"); err != nil {
			t.Errorf("a call to the successor: %v", err)
		}
		successor.Stop()
	})
}
