package services

import (
	"fmt"
	"path"
)

// Policy decides which services the voice server (and MCP clients) may see
// and call: services.allow and services.deny, glob patterns as path.Match
// takes them ("get_*", "create_file"). An empty Allow allows everything;
// Deny wins over Allow.
type Policy struct {
	Allow []string
	Deny  []string
}

// Check reports a malformed pattern.
func (p Policy) Check() error {
	for _, pat := range append(append([]string(nil), p.Allow...), p.Deny...) {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", pat, err)
		}
	}
	return nil
}

// refuses says why name is not allowed ("" when it is): the setting that
// keeps it out.
func (p Policy) refuses(name string) string {
	if matchAny(p.Deny, name) {
		return "services.deny"
	}
	if len(p.Allow) > 0 && !matchAny(p.Allow, name) {
		return "services.allow"
	}
	return ""
}

func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}
