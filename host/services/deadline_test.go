package services

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// slowProvider counts the calls it got with a live context; honors says
// whether it claims to honour its context.
type slowProvider struct {
	honors bool
	live   atomic.Int32
}

func (p *slowProvider) ID() string          { return "plugin:slow" }
func (p *slowProvider) HonorsContext() bool { return p.honors }
func (p *slowProvider) Services() []Service {
	return []Service{{Name: "tool", Parameters: json.RawMessage(`{"type":"object"}`)}}
}
func (p *slowProvider) Call(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	if ctx.Err() == nil {
		p.live.Add(1)
	}
	return json.RawMessage(`"ok"`), nil
}

// TestValidationRunsWithinTheCallsDeadline: a call whose params take
// longer to validate than its deadline is answered at the deadline, the
// provider gets no live context after it, and the call holds its slot
// until the validation ends. The slow validation is a fake (validate replaced by one
// that waits): a validation that takes long cannot be provoked at will.
func TestValidationRunsWithinTheCallsDeadline(t *testing.T) {
	for _, honors := range []bool{true, false} {
		t.Run(map[bool]string{true: "a provider that honours its context", false: "a provider that does not"}[honors], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				validate = func(e Entry, raw json.RawMessage) (json.RawMessage, string) {
					<-release
					return validateParams(e, raw)
				}
				defer func() { validate = checkParams }()
				p := &slowProvider{honors: honors}
				r := NewRegistry(RegistryOptions{})
				if err := r.Put(p); err != nil {
					t.Fatal(err)
				}
				d := NewDispatcher(r, DispatchOptions{Timeout: time.Second})
				params := json.RawMessage(`{"text":"` + strings.Repeat("a", inlineParams) + `"}`)
				out := d.Dispatch(context.Background(), voice.Call{CallID: "1", Method: "tool", Params: params})
				if out.Success || !strings.Contains(out.Error, "did not answer within 1s") {
					t.Errorf("a call whose validation outlasts its deadline: %+v", out)
				}
				if n := d.InFlight(); n != 1 {
					t.Errorf("%d calls in flight while the validation runs, want 1", n)
				}
				close(release)
				synctest.Wait()
				if n := d.InFlight(); n != 0 {
					t.Errorf("%d calls in flight after the validation ended", n)
				}
				if n := p.live.Load(); n != 0 {
					t.Errorf("the provider got a live context %d times after the deadline passed", n)
				}
			})
		})
	}
}

// TestAValidationPanicIsTheHosts: a validation that panics (a fake: the
// validator panicked on a long fraction before numbers were bounded) is
// the host's internal error, not the provider's, and calls nothing.
func TestAValidationPanicIsTheHosts(t *testing.T) {
	validate = func(Entry, json.RawMessage) (json.RawMessage, string) { panic("deliberate panic") }
	defer func() { validate = checkParams }()
	for _, honors := range []bool{true, false} {
		p := &slowProvider{honors: honors}
		r := NewRegistry(RegistryOptions{})
		if err := r.Put(p); err != nil {
			t.Fatal(err)
		}
		d := NewDispatcher(r, DispatchOptions{})
		out := d.Dispatch(context.Background(), voice.Call{CallID: "1", Method: "tool", Params: json.RawMessage(`{}`)})
		if out.Success || out.Error != "tool failed: internal error in the host" || p.live.Load() != 0 {
			t.Errorf("honors %v: %+v, provider called %d times", honors, out, p.live.Load())
		}
	}
}
