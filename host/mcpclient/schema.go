package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
