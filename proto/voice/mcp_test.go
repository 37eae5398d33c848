package voice

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestParsingACallAllocatesOnlyWhatItKeeps: a call as the voice server
// sends it is parsed with an allocation for the Call and one for each of
// what it keeps (call_id, method, params), nothing for the parsing itself:
// ParseMCP is on the way of every call.
func TestParsingACallAllocatesOnlyWhatItKeeps(t *testing.T) {
	p := []byte(`{"type":"call","data":{"call_id":"call_0001","method":"get_current_time","params":{"format":"simple"}}}`)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := ParseMCP(p); err != nil {
			t.Fatal(err)
		}
	})
	want := 4.0
	if raceDetector {
		want++ // json.Valid's scanner comes from a sync.Pool, which -race empties at random
	}
	if allocs > want {
		t.Fatalf("parsing a call: %v allocations, want at most %v (the Call, call_id, method, params)", allocs, want)
	}
}

// mcpCases are payloads the quick reading of a call must read exactly as
// encoding/json does, or leave to it; it reads the first quickCases itself.
const quickCases = 4

var mcpCases = []string{
	`{"type":"call","data":{"call_id":"c1","method":"m","params":{"a":[1,{"b":"}"}]}}}`,
	` { "data" : { "params" : null , "method" : "m" , "call_id" : "c1" } , "type" : "call" } `,
	`{"type":"call","data":{"call_id":"c1","method":"m"}}`,
	`{"type":"call","data":{"call_id":"c1","method":"m","params":"x\"y"}}`,
	`{"type":"call","data":{"call_id":"c\u0031","method":"m"}}`,
	`{"type":"call","data":{"call_id":"c1","method":"m","method":"n"}}`,
	`{"type":"call","type":"result","data":{"call_id":"c1","method":"m"}}`,
	`{"Type":"call","data":{"CALL_ID":"c1","method":"m"}}`,
	`{"type":"call","data":{"call_id":"c1","method":"m","extra":{"x":1}},"more":[]}`,
	`{"type":"call","data":{"call_id":"","method":"m"}}`,
	`{"type":"call","data":{"call_id":"c1","method":7}}`,
	`{"type":"call","data":null}`,
	`{"type":"call","data":"x"}`,
	`{"type":"call","data":{"call_id":"c1","method":"m"}} trailing`,
	`{"type":"call","data":{"call_id":"c1","method":"m\xff"}}`,
	`{"type":"call","data":{"call_id":"c1","method":"m","params":{"a":1}}`,
	`{"type":"result","data":{"call_id":"c1","result":{"success":true,"data":"x"}}}`,
	`{"type":"register","data":{"services":{"a":{"description":"d"}}}}`,
	`[]`, `"call"`, ``, `{}`,
}

// TestAQuickCallReadsAsEncodingJSONReadsIt: every case parses to the same
// value and the same error as by encoding/json alone.
func TestAQuickCallReadsAsEncodingJSONReadsIt(t *testing.T) {
	for i, in := range mcpCases {
		sameAsSlow(t, []byte(in))
		if _, quick := quickCall([]byte(in)); quick != (i < quickCases) {
			t.Errorf("%s: read quickly %v, want %v", in, quick, i < quickCases)
		}
	}
}

func sameAsSlow(t *testing.T, p []byte) {
	t.Helper()
	got, gerr := ParseMCP(p)
	want, werr := parseMCPJSON(p) // encoding/json alone
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, encoding/json's %v", p, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, encoding/json's %#v", p, got, want)
	}
}

func FuzzParseMCP(f *testing.F) {
	for _, in := range mcpCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		sameAsSlow(t, p)
		if v, err := ParseMCP(p); err == nil {
			if c, ok := v.(*Call); ok && len(c.Params) > 0 && !json.Valid(c.Params) {
				t.Fatalf("%q: params %q are not JSON", p, c.Params)
			}
		}
	})
}
