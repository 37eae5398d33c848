package supervise_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/host/supervise"
)

// TestLazyChildThatServedACallWhileDescribedStays: a lazy provider without
// a cached description is started to be described. A call that reaches
// that child as soon as its services are registered (the server calls at
// once) makes it a child in use: it keeps running until IdleStop, rather
// than being stopped right after the call as if nobody had used it.
func TestLazyChildThatServedACallWhileDescribedStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t)
		o := l.options()
		o.Lazy, o.IdleStop = true, time.Minute
		s := supervise.New(o)
		t.Cleanup(s.Stop)
		var data json.RawMessage
		var err error
		l.mu.Lock()
		l.afterPut = func() { data, err = call(s, "now") }
		l.mu.Unlock()
		s.Load(l.starter([]string{"now"}, nil), nil)
		settle(t, s)
		answeredBy(t, "a call right after the register", data, err, 1)
		wantState(t, s, supervise.StateRunning)
		if l.child(1).isKilled() {
			t.Fatalf("the child that served a call was stopped at once: %q", l.events())
		}
		time.Sleep(o.IdleStop + time.Second)
		synctest.Wait()
		wantState(t, s, supervise.StateIdle)
		if !l.child(1).isKilled() {
			t.Fatalf("the child was not stopped after IdleStop without calls: %q", l.events())
		}
	})
}
