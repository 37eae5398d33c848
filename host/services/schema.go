package services

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/clip"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders the keywords this file does not phrase itself.
var printer = message.NewPrinter(language.English)

// defaultParameters is the schema of a service that declares none.
var defaultParameters = json.RawMessage(`{"type":"object"}`)

// namePattern is what a service name (and a registered, prefixed name) must match.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidName reports whether name may be a service's (registered) name.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// checkName explains what is wrong with a service name, or returns nil.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty service name")
	}
	if !namePattern.MatchString(name) {
		return fmt.Errorf("service name %s must be 1 to 64 letters, digits, '_', '.' or '-'", quoteShort(name))
	}
	return nil
}

// noLoader refuses every external document: a service schema must be
// self-contained, and compiling it must never read a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not allowed; a parameters schema must be self-contained", url)
}

// schemaURL is where a schema lives while it is compiled. Relative $refs
// resolve under it and are refused by noLoader.
const schemaURL = "mem://agenthost/parameters.json"

// compileParameters normalises a service's parameters (nil, empty or null
// become {"type":"object"}; whitespace is compacted) and compiles them as a
// JSON Schema (draft 2020-12 unless the schema names another). The schema must
// be a JSON object and, when it states a type, describe an object.
func compileParameters(raw json.RawMessage) (json.RawMessage, *jsonschema.Schema, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		raw = defaultParameters
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, nil, fmt.Errorf("parameters are not valid JSON: %v", err)
	}
	compact := json.RawMessage(buf.Bytes())
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact))
	if err != nil {
		return nil, nil, fmt.Errorf("parameters are not valid JSON: %v", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("parameters must be a JSON Schema object, got %s", jsonKind(doc))
	}
	if t, ok := obj["type"]; ok && !allowsObject(t) {
		return nil, nil, fmt.Errorf("parameters must describe an object (call params are always an object), but type is %s", compactJSON(t))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, fmt.Errorf("invalid parameters schema: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid parameters schema: %s", describeSchemaError(err, doc))
	}
	return compact, sch, nil
}

// allowsObject reports whether a schema's "type" value admits objects.
func allowsObject(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s == "object" {
				return true
			}
		}
	}
	return false
}

// describeSchemaError renders a compile error; a schema that breaks the
// meta-schema is described like invalid params, with paths into the schema.
func describeSchemaError(err error, doc any) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			return strings.Join(renderValidation(ve, doc, "schema"), "; ")
		}
	}
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) && lue.Err != nil {
		return lue.Err.Error()
	}
	return err.Error()
}

// maxProblems bounds the number of problems one message lists.
const maxProblems = 8

// renderValidation turns v6's error tree into lines a person can read, one
// per problem, sorted, e.g. `volume: must be at most 100 (got 150)` or
// `missing required parameter "filename"`. root is the validated instance
// (to tell array indexes from object keys); noun names what the top-level
// keys are ("parameter" for call params).
func renderValidation(ve *jsonschema.ValidationError, root any, noun string) []string {
	r := renderer{root: root, noun: noun}
	lines := r.walk(ve)
	sort.Strings(lines)
	lines = dedupe(lines)
	if len(lines) == 0 {
		lines = []string{"does not match the schema"}
	}
	if len(lines) > maxProblems {
		more := len(lines) - maxProblems
		lines = append(lines[:maxProblems:maxProblems], fmt.Sprintf("and %d more problem%s", more, plural(more)))
	}
	return lines
}

type renderer struct {
	root any
	noun string
}

// walk returns the lines for e and its causes.
func (r renderer) walk(e *jsonschema.ValidationError) []string {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		var lines []string
		for _, c := range e.Causes {
			lines = append(lines, r.walk(c)...)
		}
		if len(lines) == 0 {
			return []string{r.at(e.InstanceLocation, "does not match the schema")}
		}
		return lines
	case *kind.AnyOf, *kind.OneOf:
		if o, ok := k.(*kind.OneOf); ok && len(o.Subschemas) > 1 {
			return []string{r.at(e.InstanceLocation, "matches more than one of the allowed forms")}
		}
		// Alternatives: when every one is about this same value, say
		// "must be X, or must be Y"; otherwise stay short.
		var alts []string
		for _, c := range e.Causes {
			for _, l := range r.walk(c) {
				prefix := r.at(e.InstanceLocation, "")
				if !strings.HasPrefix(l, prefix) {
					return []string{r.at(e.InstanceLocation, "does not match any of the allowed forms")}
				}
				alts = append(alts, strings.TrimPrefix(l, prefix))
			}
		}
		if len(alts) == 0 {
			return []string{r.at(e.InstanceLocation, "does not match any of the allowed forms")}
		}
		return []string{r.at(e.InstanceLocation, strings.Join(dedupe(alts), ", or "))}
	case *kind.Required:
		lines := make([]string, 0, len(k.Missing))
		for _, m := range k.Missing {
			lines = append(lines, fmt.Sprintf("missing required %s %s", r.noun, quoteShort(r.path(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], m)))))
		}
		return lines
	case *kind.AdditionalProperties:
		lines := make([]string, 0, len(k.Properties))
		for _, p := range k.Properties {
			lines = append(lines, fmt.Sprintf("unknown %s %s", r.noun, quoteShort(r.path(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], p)))))
		}
		return lines
	}
	return []string{r.at(e.InstanceLocation, describeKind(e.ErrorKind))}
}

// at prefixes msg with the value's path ("a.b[2]: "), or nothing at the root.
func (r renderer) at(loc []string, msg string) string {
	if len(loc) == 0 {
		return msg
	}
	return clip.String(r.path(loc), 80) + ": " + msg
}

// path renders an instance location as a.b[2], walking the instance to tell
// array indexes from object keys that happen to be digits.
func (r renderer) path(loc []string) string {
	var sb strings.Builder
	v := r.root
	for _, tok := range loc {
		switch cur := v.(type) {
		case []any:
			sb.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur) {
				v = cur[i]
			} else {
				v = nil
			}
			continue
		case map[string]any:
			v = cur[tok]
		default:
			v = nil
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(tok)
	}
	return sb.String()
}

// describeKind phrases one failed keyword.
func describeKind(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = withArticle(w)
		}
		return fmt.Sprintf("must be %s (got %s)", strings.Join(want, " or "), k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		if len(want) == 1 {
			return fmt.Sprintf("must be %s (got %s)", want[0], display(k.Got))
		}
		return fmt.Sprintf("must be one of %s (got %s)", strings.Join(want, ", "), display(k.Got))
	case *kind.Const:
		return fmt.Sprintf("must be %s (got %s)", display(k.Want), display(k.Got))
	case *kind.Minimum:
		return fmt.Sprintf("must be at least %s (got %s)", ratString(k.Want), ratString(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be at most %s (got %s)", ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be greater than %s (got %s)", ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be less than %s (got %s)", ratString(k.Want), ratString(k.Got))
	case *kind.MultipleOf:
		return fmt.Sprintf("must be a multiple of %s (got %s)", ratString(k.Want), ratString(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d character%s long (got %d)", k.Want, plural(k.Want), k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d character%s long (got %d)", k.Want, plural(k.Want), k.Got)
	case *kind.Pattern:
		return fmt.Sprintf("must match the pattern %s (got %s)", quoteShort(k.Want), quoteShort(k.Got))
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d item%s (got %d)", k.Want, plural(k.Want), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d item%s (got %d)", k.Want, plural(k.Want), k.Got)
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d must not be equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d propert%s (got %d)", k.Want, pluralY(k.Want), k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d propert%s (got %d)", k.Want, pluralY(k.Want), k.Got)
	case *kind.Format:
		return fmt.Sprintf("must be a valid %s (got %s)", k.Want, display(k.Got))
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.Not:
		return "must not match the excluded form"
	}
	return k.LocalizedString(printer)
}

// withArticle turns a JSON Schema type name into "a string", "an integer".
func withArticle(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// display renders a JSON value for a message: strings quoted and shortened,
// numbers as written, containers by kind.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return quoteShort(v)
	case json.Number:
		return clip.String(v.String(), 40)
	case nil:
		return "null"
	case bool, float64, int, int64:
		return fmt.Sprint(v)
	}
	return jsonKind(v)
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float64, int, int64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// ratString writes an exact integer as digits and anything else as a float.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return clip.String(r.Num().String(), 40)
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quoteShort quotes s for a message, shortened so a huge value from the
// server cannot make a huge error.
func quoteShort(s string) string {
	return strconv.Quote(clip.String(s, 64))
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip.String(string(b), 64)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

// dedupe removes adjacent duplicates (lines are sorted first where it matters).
func dedupe(lines []string) []string {
	var out []string
	for _, l := range lines {
		if len(out) > 0 && out[len(out)-1] == l {
			continue
		}
		out = append(out, l)
	}
	return out
}
