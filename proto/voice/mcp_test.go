package voice

import "testing"

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
	if allocs > 4 {
		t.Fatalf("parsing a call: %v allocations, want at most 4 (the Call, call_id, method, params)", allocs)
	}
}
