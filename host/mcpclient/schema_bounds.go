package mcpclient

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Counts and bounds: exclusive bounds rewritten, what the subset cannot check kept as words.

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
