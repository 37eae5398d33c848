package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// $ref, allOf and nullable branches inlined before reduction (see schema.go).

// flatten inlines $ref, allOf and the single non-null branch of
// anyOf/oneOf, so that m has none of them.
func (r *reducer) flatten(m map[string]any, path string, depth int) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s is nested more than %d levels deep", at(path), maxSchemaDepth)
	}
	if r.nodes++; r.nodes > maxSchemaNodes {
		return nil, fmt.Errorf("%s is too large: more than %d schemas once its $refs are expanded", at(path), maxSchemaNodes)
	}
	if ref, ok := m["$ref"]; ok {
		s, ok := ref.(string)
		if !ok {
			return nil, fmt.Errorf("%s: $ref must be a string", at(path))
		}
		for _, seen := range r.refs {
			if seen == s {
				return nil, fmt.Errorf("%s: $ref %q is recursive; the voice server's schemas cannot nest without end", at(path), s)
			}
		}
		target, err := r.resolve(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", at(path), err)
		}
		// The ref stays on the stack while this schema's children are
		// reduced (node pops it), so a cycle through properties is found.
		r.refs = append(r.refs, s)
		t, err := r.flatten(target, path, depth+1)
		if err != nil {
			return nil, err
		}
		rest := without(m, "$ref")
		if m, err = merge(t, rest, path); err != nil {
			return nil, err
		}
	}
	if all, ok := m["allOf"]; ok {
		list, ok := all.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("%s: allOf must be a non-empty array", at(path))
		}
		acc := without(m, "allOf")
		branches := r.branchRefs()
		for _, sub := range list {
			sm, ok := sub.(map[string]any)
			if !ok {
				if b, isBool := sub.(bool); isBool && b {
					continue
				}
				return nil, fmt.Errorf("%s: an allOf entry is not a schema object", at(path))
			}
			f, err := r.flatten(sm, path, depth+1)
			if err != nil {
				return nil, err
			}
			branches.next()
			if acc, err = merge(acc, f, path); err != nil {
				return nil, err
			}
		}
		branches.end()
		m = acc
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, ok := m[kw]
		if !ok {
			continue
		}
		list, ok := alts.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("%s: %s must be a non-empty array", at(path), kw)
		}
		var branches []map[string]any
		refs := r.branchRefs()
		for _, sub := range list {
			sm, ok := sub.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: a %s entry is not a schema object", at(path), kw)
			}
			f, err := r.flatten(sm, path, depth+1)
			if err != nil {
				return nil, err
			}
			refs.next()
			if isNull(f) {
				continue
			}
			branches = append(branches, f)
		}
		refs.end()
		rest := without(m, kw)
		switch {
		case len(branches) == 0:
			return nil, fmt.Errorf("%s only accepts null", at(path))
		case len(branches) == 1:
			var err error
			if m, err = merge(rest, branches[0], path); err != nil {
				return nil, err
			}
		default:
			e, err := enumOf(branches)
			if err != nil {
				return nil, fmt.Errorf("%s: %s with %d alternatives cannot be expressed (the voice server's schemas have no alternatives)", at(path), kw, len(branches))
			}
			if m, err = merge(rest, e, path); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// branchRefs keeps the $refs that sibling branches (of allOf, anyOf, oneOf)
// expand apart: a branch does not see its siblings' refs, so two branches
// that refer to one definition are not a cycle, and the schema they make
// together keeps all of them while its children are reduced.
func (r *reducer) branchRefs() *refBranches {
	return &refBranches{r: r, base: len(r.refs)}
}

type refBranches struct {
	r      *reducer
	base   int
	pushed []string
}

// next ends one branch: its refs are set aside.
func (b *refBranches) next() {
	for _, s := range b.r.refs[b.base:] {
		if !slices.Contains(b.pushed, s) {
			b.pushed = append(b.pushed, s)
		}
	}
	b.r.refs = b.r.refs[:b.base]
}

// end puts every branch's refs back on the stack.
func (b *refBranches) end() { b.r.refs = append(b.r.refs, b.pushed...) }

// isNull reports whether a schema accepts only null.
func isNull(m map[string]any) bool {
	if t, ok := m["type"].(string); ok && t == "null" {
		return true
	}
	if c, ok := m["const"]; ok && c == nil {
		return true
	}
	if e, ok := m["enum"].([]any); ok && len(e) == 1 && e[0] == nil {
		return true
	}
	return false
}

// enumOf turns alternatives that are each const or enum of one JSON type
// into one enum, or fails.
func enumOf(branches []map[string]any) (map[string]any, error) {
	var values []any
	typ := ""
	var desc []string
	for _, b := range branches {
		var vals []any
		if c, ok := b["const"]; ok {
			vals = []any{c}
		} else if e, ok := b["enum"].([]any); ok {
			vals = e
		} else {
			return nil, errors.New("not an enum")
		}
		for k := range b {
			switch k {
			case "const", "enum", "type", "title", "description", "$comment":
			default:
				return nil, errors.New("not an enum")
			}
		}
		if d, ok := b["description"].(string); ok && d != "" {
			desc = append(desc, d)
		} else if t, ok := b["title"].(string); ok && t != "" {
			desc = append(desc, t)
		}
		for _, v := range vals {
			k := valueType(v)
			if k == "" || (typ != "" && k != typ && !(numeric(k) && numeric(typ))) {
				return nil, errors.New("mixed types")
			}
			if typ == "" || typ == "integer" {
				typ = k
			}
			values = append(values, v)
		}
	}
	out := map[string]any{"type": typ, "enum": values}
	if len(desc) == len(values) {
		parts := make([]string, len(values))
		for i, v := range values {
			b, _ := json.Marshal(v)
			parts[i] = string(b) + ": " + desc[i]
		}
		out["x-agenthost-enum-notes"] = strings.Join(parts, "; ")
	}
	return out, nil
}

func numeric(t string) bool { return t == "number" || t == "integer" }

// valueType is the schema type of a JSON value ("" for null).
func valueType(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if isIntegral(v) {
			return "integer"
		}
		return "number"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

func isIntegral(n json.Number) bool {
	if _, err := n.Int64(); err == nil {
		return true
	}
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
}

// resolve finds a local JSON pointer ("#/$defs/x").
func (r *reducer) resolve(ref string) (map[string]any, error) {
	if ref == "#" {
		return nil, fmt.Errorf("$ref %q is recursive; the voice server's schemas cannot nest without end", ref)
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q is not a local reference (#/…); the schema must be self-contained", ref)
	}
	var cur any = r.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q points to nothing", ref)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("$ref %q points to nothing", ref)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("$ref %q points to nothing", ref)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q does not point to a schema object", ref)
	}
	return m, nil
}

// without returns a copy of m less the given keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
