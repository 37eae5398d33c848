package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const emptySchema = `{"type":"object","properties":{}}`

// compiledSchema is a service's schema, checked and ready to validate params.
type compiledSchema struct {
	text   string // compact JSON, as sent to the host
	schema *jsonschema.Schema
}

// compileSchema checks that text is a JSON Schema for an object and compiles it.
func compileSchema(service, text string) (*compiledSchema, error) {
	if strings.TrimSpace(text) == "" {
		text = emptySchema
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("schema must be a JSON object")
	}
	if obj["type"] != "object" {
		return nil, fmt.Errorf(`schema must have "type": "object" at the top (params are a JSON object), got "type": %v`, jsonText(obj["type"]))
	}
	if props, ok := obj["properties"]; ok {
		if _, ok := props.(map[string]any); !ok {
			return nil, errors.New(`schema "properties" must be an object`)
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + service + ".schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			return nil, fmt.Errorf("schema is not a valid JSON Schema: %s", describeValidation(sve.Err))
		}
		return nil, fmt.Errorf("schema does not compile: %w", err)
	}
	return &compiledSchema{text: buf.String(), schema: sch}, nil
}

func jsonText(v any) string {
	if v == nil {
		return "(missing)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// validate checks params against the schema and returns an error for a person.
func (c *compiledSchema) validate(params json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return fmt.Errorf("params are not valid JSON: %v", err)
	}
	if err := c.schema.Validate(inst); err != nil {
		return errors.New(describeValidation(err))
	}
	return nil
}

// describeValidation flattens a jsonschema validation error into one line,
// e.g. `at "format": value must be one of "simple", "detailed"`.
func describeValidation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	seen := map[string]bool{}
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") {
			continue
		}
		if loc := strings.TrimPrefix(u.InstanceLocation, "/"); loc != "" {
			msg = fmt.Sprintf("at %q: %s", strings.ReplaceAll(loc, "/", "."), msg)
		}
		if !seen[msg] {
			seen[msg] = true
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) == 0 {
		return ve.Error()
	}
	return strings.Join(msgs, "; ")
}

// SchemaFor derives a JSON Schema for the params of a service from the
// struct type T, using only the keywords the voice server knows (type,
// properties, required, description, enum, minimum/maximum,
// minLength/maxLength, items). Field tags:
//
//	json:"name,omitempty"   the param's name; omitempty (or a pointer type) makes it optional,
//	                        otherwise it is required; json:"-" skips the field
//	desc:"..."              description
//	enum:"a,b,c"            allowed values (strings, or numbers for number fields)
//	min:"1" max:"10"        minimum / maximum (numbers)
//	minLength:"1" maxLength:"80"   string length limits
//
// Supported field types: string, bool, integers, floats, slices and arrays,
// maps with string keys, nested structs, pointers to these, time.Time
// (a string) and json.RawMessage or interface types (any JSON).
func SchemaFor[T any]() (string, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "", fmt.Errorf("SchemaFor: %s is not a struct; params are a JSON object", t)
	}
	s, err := schemaOf(t, map[reflect.Type]bool{})
	if err != nil {
		return "", fmt.Errorf("SchemaFor[%s]: %w", t, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// jsonSchema is the subset of JSON Schema SchemaFor writes, in a stable order.
type jsonSchema struct {
	Type                 string        `json:"type,omitempty"`
	Description          string        `json:"description,omitempty"`
	Enum                 []any         `json:"enum,omitempty"`
	Minimum              *float64      `json:"minimum,omitempty"`
	Maximum              *float64      `json:"maximum,omitempty"`
	MinLength            *int          `json:"minLength,omitempty"`
	MaxLength            *int          `json:"maxLength,omitempty"`
	Items                *jsonSchema   `json:"items,omitempty"`
	Properties           *orderedProps `json:"properties,omitempty"`
	Required             []string      `json:"required,omitempty"`
	AdditionalProperties *jsonSchema   `json:"additionalProperties,omitempty"`
}

// orderedProps keeps struct field order in the JSON output.
type orderedProps struct {
	names []string
	props map[string]*jsonSchema
}

func (o *orderedProps) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, n := range o.names {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		v, err := json.Marshal(o.props[n])
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func schemaOf(t reflect.Type, visiting map[reflect.Type]bool) (*jsonSchema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return &jsonSchema{Type: "string"}, nil
	case t == rawType, t.Kind() == reflect.Interface:
		return &jsonSchema{}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return &jsonSchema{Type: "string"}, nil
	case reflect.Bool:
		return &jsonSchema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &jsonSchema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &jsonSchema{Type: "number"}, nil
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key type %s is not a string", t.Key())
		}
		vals, err := schemaOf(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: "object", AdditionalProperties: vals}, nil
	case reflect.Struct:
		if visiting[t] {
			return nil, fmt.Errorf("type %s is recursive", t)
		}
		visiting[t] = true
		defer delete(visiting, t)
		s := &jsonSchema{Type: "object", Properties: &orderedProps{props: map[string]*jsonSchema{}}}
		if err := addFields(s, t, visiting); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("unsupported type %s", t)
}

func addFields(s *jsonSchema, t reflect.Type, visiting map[reflect.Type]bool) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := addFields(s, ft, visiting); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs, err := schemaOf(f.Type, visiting)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if err := applyTags(fs, f); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if _, dup := s.Properties.props[name]; !dup {
			s.Properties.names = append(s.Properties.names, name)
		}
		s.Properties.props[name] = fs
		optional := f.Type.Kind() == reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if !optional {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

func applyTags(s *jsonSchema, f reflect.StructField) error {
	s.Description = f.Tag.Get("desc")
	if e, ok := f.Tag.Lookup("enum"); ok {
		for _, v := range strings.Split(e, ",") {
			v = strings.TrimSpace(v)
			switch s.Type {
			case "string":
				s.Enum = append(s.Enum, v)
			case "integer", "number":
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("enum value %q is not a number", v)
				}
				s.Enum = append(s.Enum, n)
			case "array":
				if s.Items != nil && s.Items.Type == "string" {
					s.Items.Enum = append(s.Items.Enum, v)
					continue
				}
				return errors.New("enum on an array needs string items")
			default:
				return fmt.Errorf("enum on a %s field", s.Type)
			}
		}
	}
	for _, kw := range []struct {
		tag string
		dst **float64
	}{{"min", &s.Minimum}, {"max", &s.Maximum}} {
		if v, ok := f.Tag.Lookup(kw.tag); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("%s:%q is not a number", kw.tag, v)
			}
			*kw.dst = &n
		}
	}
	for _, kw := range []struct {
		tag string
		dst **int
	}{{"minLength", &s.MinLength}, {"maxLength", &s.MaxLength}} {
		if v, ok := f.Tag.Lookup(kw.tag); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s:%q is not a non-negative integer", kw.tag, v)
			}
			*kw.dst = &n
		}
	}
	return nil
}

// Typed adapts a handler that takes its params as a struct T. Params that do
// not decode into T give an "invalid params" error result.
func Typed[T any](fn func(ctx context.Context, in T) (any, error)) Handler {
	return func(ctx context.Context, p Params) (any, error) {
		var in T
		if err := p.Decode(&in); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, InvalidParams("invalid params: %q must be %s, not %s", te.Field, te.Type, te.Value)
			}
			return nil, InvalidParams("invalid params: %v", err)
		}
		return fn(ctx, in)
	}
}

// TypedService makes a Service whose schema is derived from T (see
// [SchemaFor]) and whose handler takes T (see [Typed]). A type SchemaFor
// cannot handle makes Serve refuse to start, with the reason.
func TypedService[T any](name, description string, fn func(ctx context.Context, in T) (any, error)) Service {
	schema, err := SchemaFor[T]()
	return Service{Name: name, Description: description, Schema: schema, Handler: Typed(fn), schemaErr: err}
}
