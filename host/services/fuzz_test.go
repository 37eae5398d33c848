package services_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// FuzzDispatchParams sends random params to every service: Dispatch must
// never panic, always answer with exactly one well-formed outcome (success
// with valid data, or failure with a message), and that outcome must frame.
func FuzzDispatchParams(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `1`, `{"format":"fancy"}`, `{"format":"detailed"}`,
		`{"filename":"a","count":1.5,"volume":1e400,"tags":[1,{}],"opts":{"level":"x"}}`,
		`{"filename":"` + "\xff\xfe" + `"}`, `{"a":`, `{"filename":"a"}{}`, `{"":{"":[[[[]]]]}}`,
		`{"volume":-0,"count":1e2,"filename":"##END"}`, `{"filename":"a","volume":100.0000000000000000001}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	d, r := setup(f, services.DispatchOptions{Timeout: time.Minute})
	methods := r.Names()
	f.Fuzz(func(t *testing.T, params []byte, pick uint8) {
		method := methods[int(pick)%len(methods)]
		out := d.Dispatch(context.Background(), voice.Call{CallID: "f", Method: method, Params: params})
		if out.Success {
			if !json.Valid(out.Data) || out.Error != "" {
				t.Fatalf("success with data %q, error %q", out.Data, out.Error)
			}
		} else if out.Error == "" || out.Data != nil {
			t.Fatalf("failure without a message: %+v", out)
		}
		b, err := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: "f", Result: out})
		if err != nil {
			t.Fatalf("outcome does not marshal: %v", err)
		}
		if _, err := voice.ParseMCP(b); err != nil {
			t.Fatalf("outcome does not parse back: %v", err)
		}
		if n := d.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d after the call", n)
		}
	})
}
