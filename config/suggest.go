package config

import (
	"sort"
	"strings"
)

// levenshtein is the edit distance between a and b (by runes).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// typoLimit is how many edits still count as a typo of a word of n letters.
func typoLimit(n int) int { return max(2, n/3) }

// closest returns the candidate nearest to s within maxDist edits ("" if
// none); ties go to the alphabetically first.
func closest(s string, cands []string, maxDist int) string {
	cs := append([]string(nil), cands...)
	sort.Strings(cs)
	best, bestD := "", maxDist+1
	for _, c := range cs {
		if d := levenshtein(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// suggestKey proposes a valid dotted key for the unknown key full, whose
// siblings (valid names at the same level) are given: a sibling that looks
// like a typo, else a key elsewhere with the same or a similar last name
// (a key put under the wrong parent), else "".
func suggestKey(full []string, siblings []string) string {
	last := full[len(full)-1]
	parent := full[:len(full)-1]
	if s := closest(last, siblings, typoLimit(len(last))); s != "" {
		return dotted(append(append([]string(nil), parent...), s))
	}
	var same []string
	for _, k := range knownPaths() {
		if levenshtein(k[len(k)-1], last) <= 1 {
			same = append(same, dotted(k))
		}
	}
	return closest(dotted(full), same, 1<<30)
}

// enumHint is ` (did you mean X?)` when v looks like a typo of one of allowed.
func enumHint(v string, allowed []string) string {
	lv := strings.ToLower(v)
	if s := closest(lv, allowed, typoLimit(len(v))); s != "" {
		return "; did you mean " + s + "?"
	}
	best := ""
	for _, a := range allowed { // "on_text" -> text
		if strings.Contains(lv, a) && len(a) > len(best) {
			best = a
		}
	}
	if best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}
