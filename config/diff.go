package config

import (
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Changed lists the dotted keys whose values differ between a and b, at the
// level of single values (a list counts as one value). It is what a reload
// reports and decides on; it never carries the values themselves.
func Changed(a, b *Config) []string {
	ma, err1 := toMap(a)
	mb, err2 := toMap(b)
	if err1 != nil || err2 != nil {
		return []string{"(the configuration could not be compared)"}
	}
	var out []string
	diffMaps(ma, mb, nil, &out)
	if !slices.Equal(a.MCP.Order, b.MCP.Order) && !slices.ContainsFunc(out, func(k string) bool { return strings.HasPrefix(k, "mcp.servers.") }) {
		out = append(out, "mcp.servers") // only their order changed: it decides who owns a clashing name
	}
	sort.Strings(out)
	return out
}

func diffMaps(a, b map[string]any, p []string, out *[]string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		kp := append(append([]string(nil), p...), k)
		va, vb := a[k], b[k]
		sa, oka := va.(map[string]any)
		sb, okb := vb.(map[string]any)
		switch {
		case oka && okb:
			diffMaps(sa, sb, kp, out)
		case oka && vb == nil:
			diffMaps(sa, map[string]any{}, kp, out)
		case okb && va == nil:
			diffMaps(map[string]any{}, sb, kp, out)
		case !reflect.DeepEqual(va, vb):
			*out = append(*out, strings.Join(kp, "."))
		}
	}
}
