package services_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// TestLongDescriptionIsCut: a 2 MB description is cut to
// services.max_description, said once in the log; the register stays far
// under the frame limit, with every service in it.
func TestLongDescriptionIsCut(t *testing.T) {
	log, logs := newLog()
	r := services.NewRegistry(services.RegistryOptions{Log: log})
	huge := provider("mcp:big", "huge", "small")
	huge.svcs[0].Description = strings.Repeat("d", 2_000_000)
	mustPut(t, r, huge)
	mustPut(t, r, huge)
	desc := r.Register().Services["huge"].Description
	if len(desc) > services.DefaultMaxDescription || !strings.HasSuffix(desc, "…") {
		t.Errorf("description of %d bytes, want at most %d, cut with …", len(desc), services.DefaultMaxDescription)
	}
	if got := names(r); got != "huge,small" {
		t.Errorf("names = %s", got)
	}
	t.Logf("register with a 2 MB description: %d bytes (frame limit %d)", len(r.Canonical()), voice.DefaultMaxFrame)
	if len(r.Canonical()) > services.DefaultMaxRegister {
		t.Errorf("register of %d bytes, over %d", len(r.Canonical()), services.DefaultMaxRegister)
	}
	if n := strings.Count(logs.String(), "services.max_description"); n != 1 {
		t.Errorf("the cut is logged %d times, want once:\n%.2000s", n, logs)
	}
}

// TestRegisterBound: services that do not fit services.max_register are
// left out by a stated rule (providers in rank order, each one's services
// by name; each kept if it still fits), named in the log and LeftOut, and
// a call of one says why. A larger bound brings them back.
func TestRegisterBound(t *testing.T) {
	log, logs := newLog()
	const bound = 8 << 10
	r := services.NewRegistry(services.RegistryOptions{Order: order, MaxRegister: bound, Log: log})
	desc := strings.Repeat("x", 1000)
	big := func(id string, n int) *fake {
		f := &fake{id: id}
		for i := range n {
			f.svcs = append(f.svcs, services.Service{Name: fmt.Sprintf("%s_%d", strings.TrimPrefix(id, "mcp:"), i), Description: desc})
		}
		return f
	}
	mustPut(t, r, big("mcp:alpha", 4)) // ranked last: left out first
	mustPut(t, r, big("mcp:zulu", 4))
	mustPut(t, r, &fake{id: "builtin", fallback: true, svcs: []services.Service{svc("get_time", "")}})
	if n := len(r.Canonical()); n > bound {
		t.Fatalf("register of %d bytes, over the %d bound", n, bound)
	}
	want := "alpha_0,alpha_1,alpha_2,get_time,zulu_0,zulu_1,zulu_2,zulu_3"
	if got := names(r); got != want {
		t.Errorf("names = %s, want %s", got, want)
	}
	left := r.LeftOut()
	if len(left) != 1 || !strings.Contains(left[0], `"alpha_3"`) || !strings.Contains(left[0], "mcp:alpha") || !strings.Contains(left[0], "services.max_register") {
		t.Errorf("LeftOut = %q, want alpha_3 named with its provider and the setting", left)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "alpha_3") {
		t.Errorf("the left-out service is not logged as an error:\n%s", logs)
	}
	d := services.NewDispatcher(r, services.DispatchOptions{})
	if out := d.Dispatch(context.Background(), voice.Call{CallID: "1", Method: "alpha_3"}); out.Success || !strings.Contains(out.Error, "services.max_register") {
		t.Errorf("a call of a left-out service: %+v", out)
	}
	r.SetBounds(services.DefaultMaxDescription, 64<<10)
	if got := names(r); !strings.Contains(got, "alpha_3") || len(r.LeftOut()) != 0 {
		t.Errorf("after raising the bound: names %s, left out %q", got, r.LeftOut())
	}
}
