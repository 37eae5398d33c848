package voice

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// seedFrames reads the complete example exchange of the MCP documentation
// (testdata/seed-exchange-*.txt, copied verbatim from the seeds) and returns
// each frame's bytes as written there, with \xNN escapes resolved.
func seedFrames(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var frames [][]byte
	var cur *bytes.Buffer
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := cutDirection(line); ok {
			cur = new(bytes.Buffer)
			line = rest
		} else if cur == nil {
			continue
		} else {
			cur.WriteByte('\n')
		}
		cur.WriteString(unescapeHex(t, line))
		if strings.HasSuffix(line, EndMarker) {
			frames = append(frames, cur.Bytes())
			cur = nil
		}
	}
	if len(frames) == 0 {
		t.Fatalf("%s: no frames found", path)
	}
	return frames
}

func cutDirection(line string) (string, bool) {
	for _, p := range []string{"C -> S: ", "S -> C: "} {
		if rest, ok := strings.CutPrefix(line, p); ok {
			return rest, true
		}
	}
	return "", false
}

var hexEscape = regexp.MustCompile(`\\x[0-9a-fA-F]{2}`)

func unescapeHex(t *testing.T, s string) string {
	return hexEscape.ReplaceAllStringFunc(s, func(m string) string {
		b, err := strconv.ParseUint(m[2:], 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		return string([]byte{byte(b)})
	})
}

func TestSeedExchange(t *testing.T) {
	for _, tc := range []struct {
		file        string
		question    string
		answerStart string
	}{
		{"testdata/seed-exchange-en.txt", "What time is it?", "It is 14:30:25"},
		{"testdata/seed-exchange-zh.txt", "现在几点了?", "现在是2025年1月22日"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw := seedFrames(t, tc.file)
			want := []struct {
				typ  Type
				task string
				seq  int
			}{
				{TypeMCP, "mcp00001", 0}, {TypeText, "task1234", 0}, {TypeEnd, "task1234", 1},
				{TypeMCP, "mcp00001", 0}, {TypeMCP, "mcp00001", 0},
				{TypeText, "task1234", 0}, {TypeEnd, "task1234", 1},
			}
			if len(raw) != len(want) {
				t.Fatalf("got %d frames in the seed, want %d", len(raw), len(want))
			}
			dec := NewDecoder(iotest.HalfReader(bytes.NewReader(bytes.Join(raw, nil))))
			for i, w := range want {
				f, err := dec.Decode()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if f.Type != w.typ || f.Task != w.task || f.Seq != w.seq {
					t.Fatalf("frame %d: got %s %q/%d, want %s %q/%d", i, f.Type, f.Task, f.Seq, w.typ, w.task, w.seq)
				}
				canonical, err := AppendFrame(nil, f)
				if err != nil {
					t.Fatalf("frame %d re-encode: %v", i, err)
				}
				if exp := bytes.Replace(raw[i], []byte("[0000]"), []byte("0000"), 1); !bytes.Equal(canonical, exp) {
					t.Fatalf("frame %d re-encoded as\n%q\nwant\n%q", i, canonical, exp)
				}
				checkSeedPayload(t, i, f, tc.question, tc.answerStart)
			}
			if dec.Skipped() != 0 {
				t.Errorf("skipped %d bytes between frames, want 0", dec.Skipped())
			}
		})
	}
}

func checkSeedPayload(t *testing.T, i int, f Frame, question, answerStart string) {
	t.Helper()
	switch i {
	case 0:
		m := mustMCP(t, f.Payload).(*Register)
		svc, ok := m.Services["get_current_time"]
		if !ok || len(m.Services) != 1 {
			t.Fatalf("register: services %v", m.Services)
		}
		var schema struct {
			Type       string
			Properties map[string]struct {
				Type string
				Enum []string
			}
		}
		if err := json.Unmarshal(svc.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		if p := schema.Properties["format"]; schema.Type != "object" || p.Type != "string" || strings.Join(p.Enum, ",") != "simple,detailed" {
			t.Fatalf("register schema: %+v", schema)
		}
	case 1:
		if string(f.Payload) != question {
			t.Fatalf("question %q", f.Payload)
		}
	case 2, 6:
		if len(f.Payload) != 0 {
			t.Fatalf("END_FRAME payload %q", f.Payload)
		}
	case 3:
		c := mustMCP(t, f.Payload).(*Call)
		if c.CallID != "call_001" || c.Method != "get_current_time" || compactJSON(t, c.Params) != `{"format":"simple"}` {
			t.Fatalf("call: %+v params %s", c, c.Params)
		}
	case 4:
		r := mustMCP(t, f.Payload).(*Result)
		if r.CallID != "call_001" || !r.Result.Success || string(r.Result.Data) != `"2025-01-22 14:30:25"` {
			t.Fatalf("result: %+v data %s", r, r.Result.Data)
		}
	case 5:
		if !strings.HasPrefix(string(f.Payload), answerStart) {
			t.Fatalf("answer %q", f.Payload)
		}
	}
}

func mustMCP(t *testing.T, p []byte) any {
	t.Helper()
	v, err := ParseMCP(p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func compactJSON(t *testing.T, p []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
