package calls

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/proto/voice"
)

// FuzzResultsAreEncodedAsMarshalMCPWould: resultPayload writes the bytes
// voice.MarshalMCP writes for the same result, and fails where it fails
// (data that is not JSON), for any call_id, data and error; the seeds run
// in every go test.
func FuzzResultsAreEncodedAsMarshalMCPWould(f *testing.F) {
	for _, s := range []struct {
		id, data, err string
		ok            bool
	}{
		{"c1", `"Thursday, 26 November 2026, 12:00"`, "", true},
		{"c2", ``, "get_x failed: internal error in plugin:foo", false},
		{"c3", ` { "a" : [1, 2.5e3, true, null] , "b":"x<y>&z" } `, "", true},
		{"c\"4\\", `"tab\there, line\nthere, \u2028 and \u2029"`, "<b>&amp;\x00\x1f\b\f\r\t\u2028\u2029\x7f", false},
		{"\xff\xfe bad utf-8 \xe2\x80", `"ok"`, "bad \xc3\x28 utf-8", true},
		{"##END", `"##END ##START"`, "##START in an error ##END", false},
		{"c7", `{not json`, "", true},
		{"c8", `"é ü 日本 🎉"`, "é ü 日本 🎉", true},
	} {
		f.Add(s.id, []byte(s.data), s.err, s.ok)
	}
	f.Fuzz(func(t *testing.T, id string, data []byte, errText string, ok bool) {
		out := voice.Outcome{Success: ok, Data: json.RawMessage(data), Error: errText}
		want, werr := voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: id, Result: out})
		got, gerr := resultPayload(id, out)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ for %q %q %q: MarshalMCP %v, resultPayload %v", id, data, errText, werr, gerr)
		}
		if werr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("for %q %q %q: error %q, want %q", id, data, errText, gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("for %q %q %q:\n got %s\nwant %s", id, data, errText, got, want)
		}
	})
}

// BenchmarkResultPayload: a get_current_time result, encoded by
// resultPayload and by voice.MarshalMCP.
func BenchmarkResultPayload(b *testing.B) {
	out := voice.Outcome{Success: true, Data: json.RawMessage(`"Thursday, 26 November 2026, 12:00"`)}
	b.Run("resultPayload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resultPayload("c123", out)
		}
	})
	b.Run("MarshalMCP", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: "c123", Result: out})
		}
	})
}
