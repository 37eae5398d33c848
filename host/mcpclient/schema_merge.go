package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Combining schemas that must both hold (allOf, $ref with siblings).

// annotation keywords that merge by keeping the first.
var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"$schema": true, "$id": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true}

// merge combines two schemas that must both hold (allOf, $ref with
// siblings, a nullable branch). It fails on constraints it cannot combine.
func merge(a, b map[string]any, path string) (map[string]any, error) {
	out := without(a)
	for k, bv := range b {
		av, ok := out[k]
		if !ok {
			out[k] = bv
			continue
		}
		if annotations[k] || strings.HasPrefix(k, "x-") {
			continue // the first one wins
		}
		switch k {
		case "required":
			out[k] = union(av, bv)
		case "properties":
			am, aok := av.(map[string]any)
			bm, bok := bv.(map[string]any)
			if !aok || !bok {
				return nil, fmt.Errorf("%s: properties must be an object", at(path))
			}
			pm := without(am)
			for name, ps := range bm {
				if prev, ok := pm[name]; ok {
					pm[name] = map[string]any{"allOf": []any{prev, ps}}
				} else {
					pm[name] = ps
				}
			}
			out[k] = pm
		case "type":
			t, err := mergeType(av, bv)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", at(path), err)
			}
			out[k] = t
		case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
			out[k] = pick(av, bv, true)
		case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
			out[k] = pick(av, bv, false)
		case "enum":
			out[k] = intersect(av, bv)
		default:
			if !jsonEqual(av, bv) {
				return nil, fmt.Errorf("%s: combined schemas disagree on %s", at(path), k)
			}
		}
	}
	return out, nil
}

func mergeType(a, b any) (any, error) {
	as, bs := typeSet(a), typeSet(b)
	var both []string
	for t := range as {
		if bs[t] {
			both = append(both, t)
		} else if t == "integer" && bs["number"] {
			both = append(both, t)
		} else if t == "number" && bs["integer"] {
			both = append(both, "integer")
		}
	}
	sort.Strings(both)
	both = dedupe(both)
	switch len(both) {
	case 0:
		return nil, fmt.Errorf("combined schemas have no type in common (%v and %v)", a, b)
	case 1:
		return both[0], nil
	}
	l := make([]any, len(both))
	for i, t := range both {
		l[i] = t
	}
	return l, nil
}

func typeSet(t any) map[string]bool {
	out := map[string]bool{}
	switch t := t.(type) {
	case string:
		out[t] = true
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

func dedupe(l []string) []string {
	var out []string
	for _, s := range l {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// pick returns the larger (or smaller) of two numbers; a non-number loses.
func pick(a, b any, larger bool) any {
	af, aok := num(a)
	bf, bok := num(b)
	switch {
	case !aok:
		return b
	case !bok:
		return a
	case (bf > af) == larger:
		return b
	}
	return a
}

func num(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

func union(a, b any) any {
	seen := map[string]bool{}
	var out []any
	for _, l := range []any{a, b} {
		list, _ := l.([]any)
		for _, x := range list {
			s, ok := x.(string)
			if ok && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func intersect(a, b any) any {
	al, _ := a.([]any)
	bl, _ := b.([]any)
	out := []any{}
	for _, x := range al {
		for _, y := range bl {
			if jsonEqual(x, y) {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

func jsonEqual(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}
