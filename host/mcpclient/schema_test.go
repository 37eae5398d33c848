package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

func TestReduceSchema(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"absent", ``, `{"type":"object"}`},
		{"null", `null`, `{"type":"object"}`},
		{"empty object", `{}`, `{"type":"object"}`},
		{"server-everything get-sum", `{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"],"$schema":"http://json-schema.org/draft-07/schema#"}`,
			`{"properties":{"a":{"description":"First number","type":"number"},"b":{"description":"Second number","type":"number"}},"required":["a","b"],"type":"object"}`},
		{"keeps every subset keyword", `{"type":"object","properties":{"s":{"type":"string","minLength":1,"maxLength":8,"enum":["a","bb"],"description":"d"},"n":{"type":"integer","minimum":0,"maximum":10}},"required":["s"],"additionalProperties":false}`,
			`{"properties":{"n":{"maximum":10,"minimum":0,"type":"integer"},"s":{"description":"d","enum":["a","bb"],"maxLength":8,"minLength":1,"type":"string"}},"required":["s"],"type":"object"}`},
		{"nested object and array", `{"type":"object","properties":{"o":{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}}},"required":["l"]}}}`,
			`{"properties":{"o":{"properties":{"l":{"items":{"properties":{"x":{"type":"boolean"}},"required":["x"],"type":"object"},"type":"array"}},"required":["l"],"type":"object"}},"type":"object"}`},
		{"annotations dropped, title as description, default noted", `{"type":"object","title":"T","properties":{"c":{"title":"Count","type":"number","default":3,"examples":[1],"x-ui":1}}}`,
			`{"description":"T","properties":{"c":{"description":"Count (default 3)","type":"number"}},"type":"object"}`},
		{"const is an enum of one", `{"type":"object","properties":{"k":{"const":"only"}}}`,
			`{"properties":{"k":{"enum":["only"],"type":"string"}},"type":"object"}`},
		{"nullable type", `{"type":"object","properties":{"s":{"type":["string","null"],"description":"maybe"}}}`,
			`{"properties":{"s":{"description":"maybe","type":"string"}},"type":"object"}`},
		{"pydantic Optional", `{"type":"object","properties":{"s":{"anyOf":[{"type":"integer","minimum":1},{"type":"null"}],"default":null,"title":"S"}}}`,
			`{"properties":{"s":{"description":"S (default null)","minimum":1,"type":"integer"}},"type":"object"}`},
		{"local $ref and $defs", `{"type":"object","properties":{"u":{"$ref":"#/$defs/unit","description":"the unit"}},"$defs":{"unit":{"type":"string","enum":["c","f"]}}}`,
			`{"properties":{"u":{"description":"the unit","enum":["c","f"],"type":"string"}},"type":"object"}`},
		{"draft-07 definitions", `{"type":"object","properties":{"p":{"$ref":"#/definitions/p"}},"definitions":{"p":{"type":"integer","maximum":5}}}`,
			`{"properties":{"p":{"maximum":5,"type":"integer"}},"type":"object"}`},
		{"allOf merged", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer","minimum":2}},"required":["b"]}]}`,
			`{"properties":{"a":{"type":"string"},"b":{"minimum":2,"type":"integer"}},"required":["a","b"],"type":"object"}`},
		{"anyOf of consts is an enum", `{"type":"object","properties":{"m":{"anyOf":[{"const":"x"},{"const":"y"}]}}}`,
			`{"properties":{"m":{"enum":["x","y"],"type":"string"}},"type":"object"}`},
		{"integer exclusive bounds", `{"type":"object","properties":{"i":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}}}`,
			`{"properties":{"i":{"description":"(greater than 0; less than 10)","maximum":9,"minimum":1,"type":"integer"}},"type":"object"}`},
		{"number exclusive minimum: the next float", `{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0}}}`,
			`{"properties":{"x":{"description":"(greater than 0)","minimum":5e-324,"type":"number"}},"type":"object"}`},
		{"draft-4 boolean exclusive", `{"type":"object","properties":{"i":{"type":"integer","minimum":1,"exclusiveMinimum":true}}}`,
			`{"properties":{"i":{"description":"(greater than 1)","minimum":2,"type":"integer"}},"type":"object"}`},
		{"stricter bound wins", `{"type":"object","properties":{"i":{"type":"integer","minimum":5,"exclusiveMinimum":2}}}`,
			`{"properties":{"i":{"description":"(greater than 2)","minimum":5,"type":"integer"}},"type":"object"}`},
		{"integer and number is number", `{"type":"object","properties":{"x":{"type":["integer","number"]}}}`,
			`{"properties":{"x":{"type":"number"}},"type":"object"}`},
		{"pattern and format in words", `{"type":"object","properties":{"d":{"type":"string","format":"uri","pattern":"^https?:","description":"URL"}}}`,
			`{"properties":{"d":{"description":"URL (pattern ^https?:; format: uri)","type":"string"}},"type":"object"}`},
		{"map of strings", `{"type":"object","properties":{"h":{"type":"object","additionalProperties":{"type":"string"}}}}`,
			`{"properties":{"h":{"description":"(other keys take a string values)","type":"object"}},"type":"object"}`},
		{"array counts in words", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"},"minItems":1,"uniqueItems":true}}}`,
			`{"properties":{"l":{"description":"(at least 1 item(s); items must be unique)","items":{"type":"string"},"type":"array"}},"type":"object"}`},
		{"type inferred from enum", `{"type":"object","properties":{"e":{"enum":[1,2,3]}}}`,
			`{"properties":{"e":{"enum":[1,2,3],"type":"integer"}},"type":"object"}`},
		{"null dropped from enum", `{"type":"object","properties":{"e":{"type":["string","null"],"enum":["a",null]}}}`,
			`{"properties":{"e":{"enum":["a"],"type":"string"}},"type":"object"}`},
		{"unicode description kept", `{"type":"object","properties":{"f":{"type":"string","description":"获取当前时间"}}}`,
			`{"properties":{"f":{"description":"获取当前时间","type":"string"}},"type":"object"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReduceSchema(json.RawMessage(c.in))
			if err != nil {
				t.Fatalf("ReduceSchema: %v", err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			checkSubset(t, got)
		})
	}
}

func TestReduceSchemaRefuses(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"not JSON", `{"type":`, "inputSchema is not valid JSON"},
		{"not an object", `[1]`, "inputSchema must be a JSON object, not an array"},
		{"root not an object", `{"type":"string"}`, "inputSchema must describe an object"},
		{"unknown type", `{"type":"object","properties":{"x":{"type":"strng"}}}`, `parameter "x": type "strng" is not a JSON Schema type`},
		{"several types", `{"type":"object","properties":{"x":{"type":["string","number"]}}}`, `parameter "x" may be any of number, string; the voice server's schemas take one type`},
		{"anyOf of shapes", `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"object"}]}}}`, `parameter "x": anyOf with 2 alternatives cannot be expressed`},
		{"oneOf of shapes", `{"type":"object","properties":{"x":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, `parameter "x": oneOf with 2 alternatives`},
		{"remote $ref", `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`, `is not a local reference`},
		{"dangling $ref", `{"type":"object","properties":{"x":{"$ref":"#/$defs/nope"}}}`, `$ref "#/$defs/nope" points to nothing`},
		{"recursive $ref", `{"type":"object","properties":{"n":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}}}`, `is recursive`},
		{"patternProperties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, `inputSchema uses patternProperties`},
		{"not", `{"type":"object","properties":{"x":{"type":"string","not":{"enum":["a"]}}}}`, `parameter "x" uses not`},
		{"if/then", `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, `if/then/else`},
		{"tuple", `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}]}}}`, `parameter "t" uses items as a list`},
		{"prefixItems", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}]}}}`, `prefixItems`},
		{"any value", `{"type":"object","properties":{"v":{}}}`, `parameter "v" has no type (it accepts any value)`},
		{"schema true", `{"type":"object","properties":{"v":true}}`, `parameter "v" accepts any value`},
		{"only null", `{"type":"object","properties":{"v":{"type":"null"}}}`, `parameter "v" only accepts null`},
		{"bad minLength", `{"type":"object","properties":{"s":{"type":"string","minLength":-1}}}`, `minLength must be a non-negative integer`},
		{"properties not an object", `{"type":"object","properties":[1]}`, `properties must be an object`},
		{"nested path named", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"boolean"}]}}}}}}`, `parameter "a.b[]": oneOf`},
		{"allOf that disagrees", `{"type":"object","properties":{"x":{"allOf":[{"type":"string"},{"type":"integer"}]}}}`, `no type in common`},
		{"enum without a value of the type", `{"type":"object","properties":{"x":{"type":"string","enum":[1]}}}`, `enum has no value of type string`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReduceSchema(json.RawMessage(c.in))
			if err == nil {
				t.Fatalf("reduced to %s, want an error containing %q", got, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// allowed are the keywords a reduced schema may hold.
var allowed = map[string]bool{"type": true, "properties": true, "items": true, "required": true, "enum": true,
	"minimum": true, "maximum": true, "minLength": true, "maxLength": true, "description": true}

// checkSubset fails unless b uses only the voice server's keywords, with
// one type each, and compiles.
func checkSubset(t testing.TB, b []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("reduced schema is not JSON: %v", err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not a schema object: %s", at, b)
		}
		if _, ok := m["type"].(string); !ok || !types[m["type"].(string)] {
			t.Fatalf("%s: type %v is not one of the voice server's types: %s", at, m["type"], b)
		}
		for k, x := range m {
			if !allowed[k] {
				t.Fatalf("%s: keyword %q is outside the subset: %s", at, k, b)
			}
			switch k {
			case "properties":
				for n, p := range x.(map[string]any) {
					walk(p, at+"."+n)
				}
			case "items":
				walk(x, at+"[]")
			}
		}
	}
	walk(v, "$")
	if err := compiles(b); err != nil {
		t.Fatal(err)
	}
}

// FuzzReduceSchema: any input either is refused with an error or reduces
// to a schema in the subset that compiles, and reducing that again changes
// nothing. Nothing panics.
func FuzzReduceSchema(f *testing.F) {
	seeds := []string{
		`{}`, `{"type":"object","properties":{"a":{"type":"number"}}}`,
		`{"type":"object","properties":{"s":{"anyOf":[{"type":"string"},{"type":"null"}]}},"$defs":{"x":{"type":"integer"}}}`,
		`{"allOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"type":"object","properties":{"q":{"const":1}}}}}`,
		`{"type":"object","properties":{"i":{"type":"integer","exclusiveMinimum":1.5,"exclusiveMaximum":-3}}}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"enum":["a",null,2]}}}}`,
		`{"type":["object","null"],"required":["x","x"],"properties":{"x":{"type":"string","minLength":1e3}}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := ReduceSchema(in)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		checkSubset(t, out)
		again, err := ReduceSchema(out)
		if err != nil {
			t.Fatalf("the reduced schema %s is refused: %v", out, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("reducing twice changed it:\n%s\n%s", out, again)
		}
	})
}

func TestReduceKeepsRequiredOrderStable(t *testing.T) {
	out, err := ReduceSchema(json.RawMessage(`{"type":"object","required":["b","a","b"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Required []string }
	json.Unmarshal(out, &m)
	if !sort.StringsAreSorted([]string{"a"}) || strings.Join(m.Required, ",") != "b,a" {
		t.Errorf("required = %v, want [b a] (order kept, duplicates dropped)", m.Required)
	}
}

// TestReduceSchemaRefusesAnExplosion: $defs that each refer twice to the
// next expand to 2^depth nodes; the reduction gives up with an error
// (found by review: it ran on the supervisor's loop without end).
func TestReduceSchemaRefusesAnExplosion(t *testing.T) {
	defs := map[string]any{}
	for i := range 30 {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/l%d", i+1)}
		defs[fmt.Sprintf("l%d", i)] = map[string]any{"type": "object", "properties": map[string]any{"a": next, "b": next}}
	}
	defs["l30"] = map[string]any{"type": "string"}
	in, _ := json.Marshal(map[string]any{"$ref": "#/$defs/l0", "$defs": defs})
	_, err := ReduceSchema(in)
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("got %v, want an error that the schema is too large", err)
	}
}

// TestReduceSchemaDiamondIsNotRecursive: two allOf branches that both
// refer to one definition share it; that is not a cycle.
func TestReduceSchemaDiamondIsNotRecursive(t *testing.T) {
	in := `{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/c"}],"$defs":{
		"a":{"type":"object","properties":{"x":{"type":"string"}}},
		"b":{"$ref":"#/$defs/a","required":["x"]},
		"c":{"$ref":"#/$defs/a","description":"c"}}}`
	got, err := ReduceSchema(json.RawMessage(in))
	if err != nil {
		t.Fatalf("ReduceSchema: %v", err)
	}
	if want := `{"description":"c","properties":{"x":{"type":"string"}},"required":["x"],"type":"object"}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
