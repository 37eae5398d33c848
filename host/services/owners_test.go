package services_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// order is the host's ranking: built-ins, plugins, then MCP servers in the
// order the configuration lists them (zulu before alpha).
var order = []string{"builtin", "plugin:", "mcp:zulu", "mcp:alpha"}

// TestClashFollowsTheOrder: of two providers offering one name, the one
// ranked first owns it whichever arrived first; plugins rank before MCP
// servers; the clash is an error naming both.
func TestClashFollowsTheOrder(t *testing.T) {
	for _, c := range []struct{ keeper, other string }{{"mcp:zulu", "mcp:alpha"}, {"plugin:files", "mcp:zulu"}} {
		for _, keeperFirst := range []bool{true, false} {
			name := c.keeper + " vs " + c.other + ", keeper first"
			if !keeperFirst {
				name = c.keeper + " vs " + c.other + ", keeper last"
			}
			t.Run(name, func(t *testing.T) {
				log, logs := newLog()
				r := services.NewRegistry(services.RegistryOptions{Order: order, Log: log})
				puts := []*fake{provider(c.keeper, "x", "a"), provider(c.other, "x", "b")}
				if !keeperFirst {
					puts[0], puts[1] = puts[1], puts[0]
				}
				for _, p := range puts {
					mustPut(t, r, p)
				}
				if o := owner(t, r, "x"); o != c.keeper {
					t.Errorf("x owned by %s, want %s (ranked first)", o, c.keeper)
				}
				if got := names(r); got != "a,b,x" {
					t.Errorf("names = %s", got)
				}
				conflicts := r.Conflicts()
				if len(conflicts) != 1 || !strings.Contains(conflicts[0], c.keeper+" keeps it") || !strings.Contains(conflicts[0], c.other) {
					t.Errorf("conflicts = %q", conflicts)
				}
				if !strings.Contains(logs.String(), "level=ERROR") {
					t.Errorf("the clash is not logged as an error:\n%s", logs)
				}
			})
		}
	}
}

// TestHeldNamesStayTheirOwners: a provider that is restarting (Hold) keeps
// its names: they leave the set, a lower-ranked provider does not get
// them, calls say why, a configuration reload keeps the hold, and the
// provider has them back when it returns. Only when it leaves for good
// (RemoveProvider) does the other get the name.
func TestHeldNamesStayTheirOwners(t *testing.T) {
	for _, zuluFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "zulu first", false: "alpha first"}[zuluFirst], func(t *testing.T) {
			r := services.NewRegistry(services.RegistryOptions{Order: order})
			zulu, alpha := provider("mcp:zulu", "x", "only_zulu"), provider("mcp:alpha", "x", "only_alpha")
			if zuluFirst {
				mustPut(t, r, zulu)
				mustPut(t, r, alpha)
			} else {
				mustPut(t, r, alpha)
				mustPut(t, r, zulu)
			}
			r.Hold(zulu)
			zulu.svcs = nil // a supervisor lists nothing while its child is down
			if got := names(r); got != "only_alpha" {
				t.Fatalf("while zulu restarts: names = %s, want only_alpha (x stays zulu's)", got)
			}
			d := services.NewDispatcher(r, services.DispatchOptions{})
			out := d.Dispatch(context.Background(), voice.Call{CallID: "1", Method: "x"})
			if out.Success || !strings.Contains(out.Error, "mcp:zulu") || !strings.Contains(out.Error, "restarting") {
				t.Errorf("a call of a held name: %+v", out)
			}
			r.Reconfigure(nil, services.Policy{})
			if got := names(r); got != "only_alpha" {
				t.Fatalf("after a reload while zulu restarts: names = %s", got)
			}
			r.Hold(provider("mcp:zulu", "stale")) // not the registered instance: nothing
			back := provider("mcp:zulu", "x", "only_zulu")
			mustPut(t, r, back)
			if o := owner(t, r, "x"); o != "mcp:zulu" {
				t.Fatalf("after zulu's restart x is %s's", o)
			}
			r.Hold(back)
			r.RemoveProvider(back) // parked: it leaves for good
			if o := owner(t, r, "x"); o != "mcp:alpha" {
				t.Errorf("after zulu left, x is %s's", o)
			}
		})
	}
}
