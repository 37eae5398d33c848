package voice

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAuthRoundTrip(t *testing.T) {
	in := "eyJ.tok.en##voiceid:Chinese (Mandarin)_Wise_Women##lang:chinese##format:pcm##url:http://x:1"
	a, err := ParseAuth([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if a.Token != "eyJ.tok.en" || len(a.Params) != 4 {
		t.Fatalf("%+v", a)
	}
	if v, _ := a.Get("voiceid"); v != "Chinese (Mandarin)_Wise_Women" {
		t.Fatalf("voiceid %q", v)
	}
	if v, _ := a.Get("url"); v != "http://x:1" {
		t.Fatalf("value split on a later colon: %q", v)
	}
	out, err := a.Marshal()
	if err != nil || string(out) != in {
		t.Fatalf("%q %v", out, err)
	}
	if _, err := ParseAuth([]byte("tok##novalue")); err == nil {
		t.Fatal("a parameter without ':' was accepted")
	}
	if _, err := (Auth{Token: "t", Params: []Param{{"k", "a##b"}}}).Marshal(); err == nil {
		t.Fatal("a value with ## was accepted")
	}
}

func TestClassifyStatus(t *testing.T) {
	for in, want := range map[string]StatusKind{
		"##PING":                      StatusKindPing,
		"##INFO:PONG":                 StatusKindPong,
		"##DISCONNECT":                StatusKindDisconnect,
		"##INFO:DISCONNECT 3 seconds": StatusKindDisconnectAck,
		"##INFO:AUTH_OK":              StatusKindInfo,
		"##ERROR:AUTH_FAILED":         StatusKindError,
		"##INFO:token expired":        StatusKindError,
		"开始监听":                        StatusOther,
	} {
		if got := ClassifyStatus([]byte(in)); got != want {
			t.Errorf("%q: got %d want %d", in, got, want)
		}
	}
}

func TestTheKnownChineseStatusesAreInTheUsersWords(t *testing.T) {
	for _, c := range []struct{ payload, lang, want string }{
		{StatusListening, "", "listening"},
		{StatusListening, "English", "listening"},
		{StatusListening, "auto", "listening"},
		{StatusListening, "chinese", StatusListening},
		{StatusListening, "zh-CN", StatusListening},
		{"##INFO:AUTH_OK", "", "##INFO:AUTH_OK"},
		{"something new", "", "something new"},
	} {
		if got := StatusInWords(c.payload, c.lang); got != c.want {
			t.Errorf("StatusInWords(%q, %q) = %q, want %q", c.payload, c.lang, got, c.want)
		}
	}
}

func TestParseMCPErrors(t *testing.T) {
	for in, want := range map[string]string{
		`not json`:                                  "not JSON",
		`{"type":"hello","data":{}}`:                `unknown MCP message type "hello"`,
		`{"type":"call"}`:                           "no data",
		`{"type":"call","data":{"method":"x"}}`:     "needs call_id",
		`{"type":"result","data":{"result":{}}}`:    "no call_id",
		`{"type":"register","data":{"services":7}}`: "register data",
	} {
		_, err := ParseMCP([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestMCPPayloadWithMarkersIsEscaped(t *testing.T) {
	p, err := MarshalMCP(MCPResult, Result{CallID: "c1", Result: Outcome{Success: true, Data: json.RawMessage(`"see ##END and ##START"`)}})
	if err != nil {
		t.Fatal(err)
	}
	b := mustFrame(t, MCPFrame(p))
	f, err := NewDecoder(strings.NewReader(string(b))).Decode()
	if err != nil {
		t.Fatal(err)
	}
	r := mustMCP(t, f.Payload).(*Result)
	var s string
	if err := json.Unmarshal(r.Result.Data, &s); err != nil || s != "see ##END and ##START" {
		t.Fatalf("%q %v", s, err)
	}
}

func TestListenAndEmoji(t *testing.T) {
	f := ListenFrame("abc12345", ListenStop, "vad")
	l, err := ParseListen(f.Payload)
	if err != nil || l.TaskID != "abc12345" || l.State != "stop" || l.Mode != "vad" || l.Type != "listen" {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ParseListen([]byte(`{"type":"listen"}`)); err == nil {
		t.Fatal("LISTEN without state accepted")
	}
	e, err := ParseEmoji([]byte(`{"emoji":"happy","playSound":1,"extra":true}`))
	if err != nil || e.Emoji != "happy" || e.PlaySound != 1 {
		t.Fatalf("%+v %v", e, err)
	}
}
