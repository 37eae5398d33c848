package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The voice server's register takes a subset of JSON Schema (the protocol
// doc's "Parameter schema subset"): the types string, number, integer,
// boolean, array and object; required, enum, minimum/maximum,
// minLength/maxLength; descriptions; properties and items for nesting.
// ReduceSchema brings an MCP tool's inputSchema down to that subset.
//
// The rule: the reduced schema never accepts a call the original refuses
// because of a keyword the subset has (type, required, enum, ranges,
// lengths), and it keeps every description. What the subset cannot say is
// handled in one of three ways:
//   - rewritten exactly: const (an enum of one), local $ref and allOf
//     (inlined), a nullable type or an anyOf/oneOf with a null branch (the
//     other branch: the voice server then never sends null), an anyOf of
//     consts (an enum), exclusive bounds (the next representable bound:
//     n+1 for an integer, the next float64 for a number);
//   - kept as words in the description, because only the MCP server
//     checks them: pattern, format, default, multipleOf, item and property
//     counts, uniqueItems, additionalProperties with a schema, deprecated.
//     additionalProperties: false is dropped (the register lists the
//     properties; the MCP server refuses others itself);
//   - refused, with the reason, and the tool is left out: anything that
//     would change which values are accepted in a way the subset cannot
//     express (anyOf/oneOf alternatives of different shapes, not,
//     if/then/else, patternProperties, tuples, a $ref that is not a local
//     JSON pointer or is recursive, a value without a determinable type,
//     several types at once).
//
// Annotations without effect on validation (title, examples, $schema,
// $comment, x-… extensions, readOnly, …) are dropped; a title stands in for
// a missing description.

// maxSchemaDepth bounds nesting (and $ref expansion) of a reduced schema.
const maxSchemaDepth = 32

// maxSchemaNodes bounds the schemas visited while reducing one, $refs
// expanded: definitions that refer to each other several times would
// otherwise expand without practical end, and a register that large is of
// no use to the voice server anyway.
const maxSchemaNodes = 5000

// ReduceSchema returns the reduced form of a tool's inputSchema, or an
// error that says why it cannot be reduced faithfully. An absent or null
// schema is an object without properties.
func ReduceSchema(input json.RawMessage) (json.RawMessage, error) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("inputSchema is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("inputSchema has data after its JSON value")
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("inputSchema must be a JSON object, not %s", kindOf(doc))
	}
	r := &reducer{root: root}
	out, err := r.node(root, "", 0, true)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %v", err)
	}
	if err := compiles(b); err != nil {
		return nil, err
	}
	return b, nil
}

// compiles checks the reduced schema the way the registry will.
func compiles(b []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://reduced.json", doc); err != nil {
		return fmt.Errorf("the reduced schema is invalid: %v", err)
	}
	if _, err := c.Compile("mem://reduced.json"); err != nil {
		return fmt.Errorf("the reduced schema is invalid: %v", err)
	}
	return nil
}

type reducer struct {
	root  map[string]any
	refs  []string // $refs being expanded, to find cycles
	nodes int      // schemas visited, against maxSchemaNodes
}

// types are the voice server's types.
var types = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}

// refused keywords, with why.
var refused = map[string]string{
	"not":                   "not (a value the schema must not match)",
	"if":                    "if/then/else (conditional schemas)",
	"then":                  "if/then/else (conditional schemas)",
	"else":                  "if/then/else (conditional schemas)",
	"patternProperties":     "patternProperties (keys chosen by pattern)",
	"dependentSchemas":      "dependentSchemas",
	"dependencies":          "dependencies",
	"dependentRequired":     "dependentRequired (requirements that depend on other keys)",
	"propertyNames":         "propertyNames",
	"prefixItems":           "prefixItems (tuples)",
	"contains":              "contains",
	"unevaluatedItems":      "unevaluatedItems",
	"$dynamicRef":           "$dynamicRef",
	"$recursiveRef":         "$recursiveRef",
	"additionalItems":       "additionalItems (tuples)",
	"minContains":           "minContains",
	"maxContains":           "maxContains",
	"unevaluatedProperties": "", // handled like additionalProperties
}

// at names a location for an error: "inputSchema" or "property a.b".
func at(path string) string {
	if path == "" {
		return "inputSchema"
	}
	return "parameter " + strconv.Quote(path)
}

// node reduces one schema. root is true for the top level, which must be
// an object.
func (r *reducer) node(v any, path string, depth int, root bool) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s is nested more than %d levels deep", at(path), maxSchemaDepth)
	}
	switch v := v.(type) {
	case bool:
		if v {
			if root {
				return map[string]any{"type": "object"}, nil
			}
			return nil, fmt.Errorf("%s accepts any value (schema true); the voice server needs a type", at(path))
		}
		return nil, fmt.Errorf("%s accepts no value (schema false)", at(path))
	case map[string]any:
		defer func(n int) { r.refs = r.refs[:n] }(len(r.refs))
		m, err := r.flatten(v, path, depth)
		if err != nil {
			return nil, err
		}
		return r.reduce(m, path, depth, root)
	}
	return nil, fmt.Errorf("%s is not a schema object (got %s)", at(path), kindOf(v))
}

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

// reduce turns a flattened schema into the subset.
func (r *reducer) reduce(m map[string]any, path string, depth int, root bool) (map[string]any, error) {
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		if why, ok := refused[k]; ok && why != "" {
			return nil, fmt.Errorf("%s uses %s, which the voice server's schemas cannot express", at(path), why)
		}
	}
	if _, ok := m["items"].([]any); ok {
		return nil, fmt.Errorf("%s uses items as a list (tuples), which the voice server's schemas cannot express", at(path))
	}

	typ, err := r.typeOf(m, path, root)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"type": typ}
	var notes []string
	note := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }

	desc, _ := m["description"].(string)
	if desc == "" {
		desc, _ = m["title"].(string)
	}
	if en, ok := m["x-agenthost-enum-notes"].(string); ok {
		note("%s", en)
	}

	// enum and const
	enum, hasEnum := m["enum"]
	if c, ok := m["const"]; ok {
		if hasEnum {
			enum = intersect(enum, []any{c})
		} else {
			enum, hasEnum = []any{c}, true
		}
	}
	if e, ok := enum, hasEnum; ok {
		list, ok := e.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: enum must be an array", at(path))
		}
		var vals []any
		for _, v := range list {
			if v == nil {
				continue // null is not sent by the voice server
			}
			vt := valueType(v)
			if vt != typ && !(typ == "number" && vt == "integer") {
				continue // a value the type refuses anyway
			}
			vals = append(vals, v)
		}
		if len(vals) == 0 {
			return nil, fmt.Errorf("%s: enum has no value of type %s", at(path), typ)
		}
		out["enum"] = vals
	}

	switch typ {
	case "string":
		for _, k := range []string{"minLength", "maxLength"} {
			if v, ok := m[k]; ok {
				n, err := count(v)
				if err != nil {
					return nil, fmt.Errorf("%s: %s %v", at(path), k, err)
				}
				out[k] = n
			}
		}
		if p, ok := m["pattern"].(string); ok {
			note("pattern %s", p)
		}
		if f, ok := m["format"].(string); ok {
			note("format: %s", f)
		}
	case "number", "integer":
		if err := bounds(m, out, typ, path, note); err != nil {
			return nil, err
		}
		if v, ok := m["multipleOf"]; ok {
			note("a multiple of %v", v)
		}
		if f, ok := m["format"].(string); ok && typ == "number" {
			note("format: %s", f)
		}
	case "array":
		if it, ok := m["items"]; ok {
			if b, isBool := it.(bool); !isBool || !b {
				red, err := r.node(it, path+"[]", depth+1, false)
				if err != nil {
					return nil, err
				}
				out["items"] = red
			}
		}
		countNotes(m, note, "minItems", "at least %d item(s)", "maxItems", "at most %d item(s)")
		if u, ok := m["uniqueItems"].(bool); ok && u {
			note("items must be unique")
		}
	case "object":
		if ps, ok := m["properties"]; ok {
			pm, ok := ps.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: properties must be an object", at(path))
			}
			props := make(map[string]any, len(pm))
			names := slices.Sorted(maps.Keys(pm))
			for _, n := range names {
				child := n
				if path != "" {
					child = path + "." + n
				}
				red, err := r.node(pm[n], child, depth+1, false)
				if err != nil {
					return nil, err
				}
				props[n] = red
			}
			if len(props) > 0 || root {
				out["properties"] = props
			}
		}
		if rq, ok := m["required"]; ok {
			list, ok := rq.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: required must be an array of names", at(path))
			}
			var names []any
			seen := map[string]bool{}
			for _, x := range list {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("%s: required must be an array of names", at(path))
				}
				if !seen[s] {
					seen[s] = true
					names = append(names, s)
				}
			}
			if len(names) > 0 {
				out["required"] = names
			}
		}
		for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
			if ap, ok := m[k]; ok {
				if apm, isObj := ap.(map[string]any); isObj && len(apm) > 0 {
					sub, err := r.node(apm, path+"{}", depth+1, false)
					if err != nil {
						return nil, err
					}
					st, _ := sub["type"].(string)
					note("other keys take %s values", withArticle(st))
				}
			}
		}
		countNotes(m, note, "minProperties", "at least %d key(s)", "maxProperties", "at most %d key(s)")
	}
	if d, ok := m["default"]; ok {
		b, err := json.Marshal(d)
		if err == nil && len(b) <= 200 {
			note("default %s", b)
		}
	}
	if d, ok := m["deprecated"].(bool); ok && d {
		note("deprecated")
	}
	if len(notes) > 0 {
		extra := "(" + strings.Join(notes, "; ") + ")"
		if desc == "" {
			desc = extra
		} else {
			desc += " " + extra
		}
	}
	if desc != "" {
		out["description"] = desc
	}
	return out, nil
}

func withArticle(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "":
		return "any"
	}
	return "a " + t
}

// typeOf decides the one type of a schema.
func (r *reducer) typeOf(m map[string]any, path string, root bool) (string, error) {
	t, ok := m["type"]
	if !ok {
		if root {
			return "object", nil
		}
		return inferType(m, path)
	}
	set := typeSet(t)
	if s, isStr := t.(string); isStr && !types[s] && s != "null" {
		return "", fmt.Errorf("%s: type %q is not a JSON Schema type", at(path), s)
	}
	if l, isList := t.([]any); isList {
		for _, x := range l {
			s, ok := x.(string)
			if !ok || (!types[s] && s != "null") {
				return "", fmt.Errorf("%s: type %v is not a list of JSON Schema types", at(path), x)
			}
		}
	} else if _, isStr := t.(string); !isStr {
		return "", fmt.Errorf("%s: type must be a string or a list of strings", at(path))
	}
	delete(set, "null")
	if set["number"] && set["integer"] {
		delete(set, "integer")
	}
	var names []string
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	switch {
	case len(names) == 0:
		return "", fmt.Errorf("%s only accepts null", at(path))
	case len(names) > 1:
		return "", fmt.Errorf("%s may be any of %s; the voice server's schemas take one type", at(path), strings.Join(names, ", "))
	}
	if root && names[0] != "object" {
		return "", fmt.Errorf("inputSchema must describe an object (call params are always an object), but its type is %s", names[0])
	}
	return names[0], nil
}

// inferType finds the type of a schema that names none, from its values
// and keywords, or fails.
func inferType(m map[string]any, path string) (string, error) {
	var vals []any
	if c, ok := m["const"]; ok {
		vals = append(vals, c)
	}
	if e, ok := m["enum"].([]any); ok {
		vals = append(vals, e...)
	}
	if len(vals) > 0 {
		typ := ""
		for _, v := range vals {
			k := valueType(v)
			if k == "" {
				continue
			}
			if typ != "" && k != typ {
				if numeric(k) && numeric(typ) {
					typ = "number"
					continue
				}
				return "", fmt.Errorf("%s has values of several types and no type; the voice server's schemas take one type", at(path))
			}
			typ = k
		}
		if typ != "" {
			return typ, nil
		}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "minProperties", "maxProperties"):
		return "object", nil
	case has("items", "minItems", "maxItems", "uniqueItems"):
		return "array", nil
	case has("minLength", "maxLength", "pattern"):
		return "string", nil
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number", nil
	}
	return "", fmt.Errorf("%s has no type (it accepts any value); the voice server needs one of string, number, integer, boolean, array, object", at(path))
}

// count reads a non-negative integer keyword value.
func count(v any) (json.Number, error) {
	n, ok := v.(json.Number)
	if !ok {
		return "", fmt.Errorf("must be a number, got %s", kindOf(v))
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return "", fmt.Errorf("must be a non-negative integer, got %s", n)
		}
		i = int64(f)
	}
	if i < 0 {
		return "", fmt.Errorf("must be a non-negative integer, got %s", n)
	}
	return json.Number(strconv.FormatInt(i, 10)), nil
}

func countNotes(m map[string]any, note func(string, ...any), minKey, minText, maxKey, maxText string) {
	for _, kv := range [][2]string{{minKey, minText}, {maxKey, maxText}} {
		if v, ok := m[kv[0]]; ok {
			if n, err := count(v); err == nil {
				i, _ := n.Int64()
				note(kv[1], i)
			}
		}
	}
}

// bounds copies minimum/maximum and turns exclusive bounds (a number, or
// draft 4's boolean beside minimum/maximum) into inclusive ones.
func bounds(m, out map[string]any, typ, path string, note func(string, ...any)) error {
	type bound struct {
		key, excl string
		up        bool
	}
	for _, b := range []bound{{"minimum", "exclusiveMinimum", true}, {"maximum", "exclusiveMaximum", false}} {
		var best float64
		var bestRaw any
		have := false
		take := func(f float64, raw any) {
			if !have || (b.up && f > best) || (!b.up && f < best) {
				best, bestRaw, have = f, raw, true
			}
		}
		inclusive, hasIncl := m[b.key]
		if hasIncl {
			f, ok := num(inclusive)
			if !ok {
				return fmt.Errorf("%s: %s must be a number", at(path), b.key)
			}
			if excl, ok := m[b.excl].(bool); ok && excl {
				// draft 4: exclusiveMinimum: true makes minimum exclusive
				e, raw := step(f, typ, b.up)
				take(e, raw)
				note("%s %v", map[bool]string{true: "greater than", false: "less than"}[b.up], inclusive)
			} else {
				take(f, inclusive)
			}
		}
		if ex, ok := m[b.excl]; ok {
			if _, isBool := ex.(bool); !isBool {
				f, ok := num(ex)
				if !ok {
					return fmt.Errorf("%s: %s must be a number", at(path), b.excl)
				}
				e, raw := step(f, typ, b.up)
				take(e, raw)
				note("%s %v", map[bool]string{true: "greater than", false: "less than"}[b.up], ex)
			}
		}
		if have {
			if math.IsInf(best, 0) || math.IsNaN(best) {
				return fmt.Errorf("%s: %s is out of range", at(path), b.key)
			}
			out[b.key] = bestRaw
		}
	}
	return nil
}

// step returns the first value past an exclusive bound f: for integers the
// next integer, for numbers the next float64.
func step(f float64, typ string, up bool) (float64, any) {
	var next float64
	if typ == "integer" {
		if up {
			next = math.Floor(f) + 1
		} else {
			next = math.Ceil(f) - 1
		}
	} else if up {
		next = math.Nextafter(f, math.Inf(1))
	} else {
		next = math.Nextafter(f, math.Inf(-1))
	}
	return next, json.Number(strconv.FormatFloat(next, 'g', -1, 64))
}

// kindOf names the JSON kind of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
