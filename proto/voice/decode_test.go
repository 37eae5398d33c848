package voice

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func mustFrame(t testing.TB, f Frame) []byte {
	t.Helper()
	b, err := AppendFrame(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeAll(t *testing.T, r io.Reader, opts ...DecoderOption) ([]Frame, []error, *Decoder) {
	t.Helper()
	d := NewDecoder(r, opts...)
	var frames []Frame
	var frameErrs []error
	for {
		f, err := d.Decode()
		switch {
		case err == nil:
			frames = append(frames, f)
		case IsFrameError(err):
			frameErrs = append(frameErrs, err)
		case err == io.EOF:
			return frames, frameErrs, d
		default:
			t.Fatalf("final error: %v", err)
		}
	}
}

// Byte-exact examples from spec §3.2.
func TestSpecByteVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Frame
		hex  string
	}{
		{"PING", StatusFrame(StatusPing), "2323535441525405" + "303030303030303030303030" + "232350494e47" + "2323454e44"},
		{"PONG", StatusFrame(StatusPong), "2323535441525405" + "303030303030303030303030" + "2323494e464f3a504f4e47" + "2323454e44"},
		{"END_FRAME", Frame{Type: TypeEnd, Task: "a1b2c3d4", Seq: 1}, "2323535441525403" + "6131623263336434" + "30303031" + "2323454e44"},
	} {
		got := hex.EncodeToString(mustFrame(t, tc.f))
		if got != tc.hex {
			t.Errorf("%s: got %s want %s", tc.name, got, tc.hex)
		}
		raw, _ := hex.DecodeString(tc.hex)
		f, err := NewDecoder(bytes.NewReader(raw)).Decode()
		if err != nil || f.Type != tc.f.Type || f.Task != tc.f.Task || f.Seq != tc.f.Seq || !bytes.Equal(f.Payload, tc.f.Payload) {
			t.Errorf("%s: decoded %+v, %v", tc.name, f, err)
		}
	}
}

func TestSplitAndCoalescedReads(t *testing.T) {
	want := []Frame{
		{Type: TypeText, Task: "task0001", Seq: 0, Payload: []byte("你好")},
		{Type: TypeAudio, Task: "task0001", Seq: 1, Payload: bytes.Repeat([]byte{1, 2, 3, '#'}, 480)},
		{Type: TypeEnd, Task: "task0001", Seq: 2},
		{Type: TypeMCP, Task: "mcp1", Seq: 9999, Payload: []byte(`{"type":"call"}`)},
	}
	var stream []byte
	for _, f := range want {
		stream = append(stream, mustFrame(t, f)...)
	}
	readers := map[string]func() io.Reader{
		"one read":    func() io.Reader { return bytes.NewReader(stream) },
		"byte a read": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half reads":  func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"data+EOF":    func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
	}
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			got, errs, _ := decodeAll(t, r())
			if len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d frames want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Type != want[i].Type || got[i].Task != want[i].Task || got[i].Seq != want[i].Seq || !bytes.Equal(got[i].Payload, want[i].Payload) {
					t.Errorf("frame %d: got %v want %v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestGarbageIsSkippedAndCounted(t *testing.T) {
	good := mustFrame(t, StatusFrame(StatusPong))
	stream := append([]byte("hello ##STAR junk"), good...)
	stream = append(stream, "#tail"...)
	stream = append(stream, good...)
	got, errs, d := decodeAll(t, iotest.OneByteReader(bytes.NewReader(stream)))
	if len(got) != 2 || len(errs) != 0 {
		t.Fatalf("frames %v errors %v", got, errs)
	}
	if d.Skipped() != int64(len("hello ##STAR junk")+len("#tail")) {
		t.Fatalf("skipped %d", d.Skipped())
	}
}

func TestBracketedSeq(t *testing.T) {
	got, errs, _ := decodeAll(t, strings.NewReader("##START\x06mcp00001[0042]{}##END##START\x04abc12345[12]x##END##START\x04abc123450007ok##END"))
	if len(got) != 2 || got[0].Seq != 42 || string(got[0].Payload) != "{}" || got[1].Seq != 7 {
		t.Fatalf("frames %v", got)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "bracket") {
		t.Fatalf("errors %v", errs)
	}
}

func TestUnknownTypeIsAFrame(t *testing.T) {
	got, errs, _ := decodeAll(t, strings.NewReader("##START\x0a000000000000??##END"))
	if len(errs) != 0 || len(got) != 1 || got[0].Type != 0x0a || got[0].Type.Known() || got[0].Type.String() != "TYPE(0x0a)" {
		t.Fatalf("frames %v errors %v", got, errs)
	}
}

func TestOversizedFrameResyncs(t *testing.T) {
	good := mustFrame(t, Frame{Type: TypeText, Task: "t1", Payload: []byte("after")})
	big := mustFrame(t, Frame{Type: TypeAudio, Task: "t1", Payload: bytes.Repeat([]byte{'a'}, 500)})
	for name, stream := range map[string][]byte{
		"with end marker":    append(append([]byte{}, big...), good...),
		"without end marker": append(append([]byte{}, big[:400]...), good...),
		"endless":            append(append([]byte("##START\x02t1      0000"), bytes.Repeat([]byte{'z'}, 5000)...), good...),
	} {
		t.Run(name, func(t *testing.T) {
			got, errs, d := decodeAll(t, iotest.HalfReader(bytes.NewReader(stream)), WithMaxFrame(200))
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "200-byte limit") {
				t.Fatalf("errors %v", errs)
			}
			if len(got) != 1 || string(got[0].Payload) != "after" {
				t.Fatalf("frames %v", got)
			}
			if cap(d.buf) > 200+readChunk {
				t.Fatalf("buffer grew to %d", cap(d.buf))
			}
		})
	}
}

func TestTruncatedFrameThenNewStart(t *testing.T) {
	stream := "##START\x04task00010000half a fra" + "##START\x04task00020000whole##END"
	got, errs, _ := decodeAll(t, strings.NewReader(stream))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "truncated") {
		t.Fatalf("errors %v", errs)
	}
	if len(got) != 1 || got[0].Task != "task0002" {
		t.Fatalf("frames %v", got)
	}
}

func TestBadSeqIsSkipped(t *testing.T) {
	got, errs, _ := decodeAll(t, strings.NewReader("##START\x04task0001x0y0bad##END##START\x04task00010001ok##END"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "not 4 decimal digits") || len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("frames %v errors %v", got, errs)
	}
}

func TestEOFInsideFrame(t *testing.T) {
	_, err := NewDecoder(strings.NewReader("##START\x04task00010000no end")).Decode()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
	_, err = NewDecoder(strings.NewReader("just noise")).Decode()
	if err != io.EOF {
		t.Fatalf("got %v", err)
	}
}

func TestReadErrorIsFinal(t *testing.T) {
	boom := errors.New("connection reset")
	good := mustFrame(t, StatusFrame(StatusPong))
	d := NewDecoder(io.MultiReader(bytes.NewReader(good), iotest.ErrReader(boom)))
	if _, err := d.Decode(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
}

func TestEncoderRefusesUnframeable(t *testing.T) {
	for _, tc := range []struct {
		f    Frame
		want string
	}{
		{Frame{Type: TypeText, Task: "toolong12"}, "at most 8"},
		{Frame{Type: TypeText, Task: "t", Payload: []byte("a ##END b")}, "##END"},
		{Frame{Type: TypeText, Task: "t", Payload: []byte("a ##START b")}, "##START"},
		{Frame{Type: TypeText, Task: "t", Seq: -1}, "negative"},
	} {
		var buf bytes.Buffer
		err := NewEncoder(&buf).Encode(tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) || buf.Len() != 0 {
			t.Errorf("%v: err %v, wrote %d bytes", tc.f, err, buf.Len())
		}
	}
}

func TestEncoderPadsAndWraps(t *testing.T) {
	got := string(mustFrame(t, Frame{Type: TypeMCP, Task: "mcp1", Seq: 10003, Payload: []byte("{}")}))
	if got != "##START\x06mcp1    0003{}##END" {
		t.Fatalf("got %q", got)
	}
}

func TestSanitizeAudio(t *testing.T) {
	p := []byte("ab##ENDcd##START")
	SanitizeAudio(p)
	if err := Check(Frame{Type: TypeAudio, Task: "t", Payload: p}); err != nil || len(p) != 16 {
		t.Fatalf("%q: %v", p, err)
	}
}

func TestFrameStringMasksToken(t *testing.T) {
	a, _ := Auth{Token: "s3cret-token", Params: []Param{{"mode", "vad"}}}.Marshal()
	s := Frame{Type: TypeAuth, Task: SystemTask, Payload: a}.String()
	if strings.Contains(s, "s3cret") || !strings.Contains(s, `mode="vad"`) {
		t.Fatalf("%s", s)
	}
	if s := (Frame{Type: TypeAudio, Task: "t", Seq: 3, Payload: make([]byte, 1920)}).String(); s != "AUDIO t/0003 1920 bytes" {
		t.Fatalf("%s", s)
	}
}
