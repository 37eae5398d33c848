package services_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/services"
)

// TestRememberedParamsLetNoOthersThrough: the params that passed last pass
// at once (validcache.go); any others are validated in full, before and
// after, and a provider put again forgets what passed under its old schema.
func TestRememberedParamsLetNoOthersThrough(t *testing.T) {
	d, r := setup(t, services.DispatchOptions{})
	for range 2 {
		if out := call(d, "", "tool", `{"filename":"a"}`); !out.Success {
			t.Fatalf("valid params: %+v", out)
		}
		wantError(t, call(d, "", "tool", `{"filename":"toolongname"}`), `invalid parameters for tool: filename: must be at most 8 characters long (got 11)`)
	}
	strict := &fake{id: "plugin:tool", svcs: []services.Service{svc("tool", `{"type":"object","properties":{"filename":{"type":"string","maxLength":0}}}`)}}
	if err := r.Put(strict); err != nil {
		t.Fatal(err)
	}
	if out := call(d, "", "tool", `{"filename":"a"}`); out.Success {
		t.Fatalf("params that passed the old schema passed the new one: %+v", out)
	}
}
