package clip_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/clip"
)

type stringer string

func (s stringer) String() string { return string(s) }

// TestHandlerClipsEveryString: the message and every string of a record
// (plain, error, Stringer, bytes, a list, in a group, added by With, a
// key) come out at most n bytes long and valid UTF-8; short ones and
// other values as they were, in both the text and the JSON format.
func TestHandlerClipsEveryString(t *testing.T) {
	const n = 64
	long := strings.Repeat("é", 1000) // two bytes a rune: a cut inside one would be invalid
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		var h slog.Handler = slog.NewTextHandler(&buf, nil)
		if format == "json" {
			h = slog.NewJSONHandler(&buf, nil)
		}
		log := slog.New(clip.Handler(h, n)).With("with", long).WithGroup("g" + long)
		log.Info(long, "s", long, "err", errors.New(long), "str", stringer(long), "bytes", []byte(long),
			"list", []string{long, long, long}, slog.Group("group", "inner", long), long, "v",
			"short", "kept", "num", 42)
		line := buf.String()
		if !utf8.ValidString(line) {
			t.Errorf("%s: not valid UTF-8: %q", format, line)
		}
		if strings.Contains(line, long[:n+2]) {
			t.Errorf("%s: a string of more than %d bytes: %s", format, n, line)
		}
		for _, want := range []string{"kept", "42", "more)"} {
			if !strings.Contains(line, want) {
				t.Errorf("%s: %q missing from %s", format, want, line)
			}
		}
		if format == "json" && !json.Valid(buf.Bytes()) {
			t.Errorf("not JSON: %s", line)
		}
	}
}
