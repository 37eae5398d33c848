// Package clip shortens text for log lines and error messages, so that a
// long or hostile value (a tool name, a server's output, an Origin header)
// cannot make a huge one. Its Handler does so for every string of every
// line of a slog logger.
package clip

import "unicode/utf8"

// String returns s cut to at most n bytes on a rune boundary, with "…"
// marking the cut.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
