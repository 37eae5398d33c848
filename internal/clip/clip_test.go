package clip_test

import (
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/clip"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one too long", 11, "one too lon…"},
		{"héllo", 2, "h…"}, // é is two bytes: never cut inside it
		{"héllo", 3, "hé…"},
		{"日本語", 4, "日…"},
		{"abc", 0, "…"},
		{"abc", -1, "…"},
	} {
		got := clip.String(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("String(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
