package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type fieldInfo struct {
	names  []string       // YAML names in declaration order
	byName map[string]int // YAML name -> field index
	secret map[string]bool
	inline int // index of the ",inline" extras map, or -1
}

var fieldCache sync.Map // reflect.Type -> *fieldInfo

func structFields(t reflect.Type) *fieldInfo {
	if fi, ok := fieldCache.Load(t); ok {
		return fi.(*fieldInfo)
	}
	fi := &fieldInfo{byName: map[string]int{}, secret: map[string]bool{}, inline: -1}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") {
			fi.inline = i
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fi.names = append(fi.names, name)
		fi.byName[name] = i
		fi.secret[name] = f.Tag.Get("cfg") == "secret"
	}
	fieldCache.Store(t, fi)
	return fi
}

var (
	durationType = reflect.TypeOf(Duration(0))
	secondsType  = reflect.TypeOf(Seconds(0))
	sizeType     = reflect.TypeOf(Size(0))
)

// describe names the YAML form of v for messages; secret values are not shown.
func describe(v any, secret bool) string {
	switch x := v.(type) {
	case nil:
		return "an empty value"
	case map[string]any:
		return "a mapping"
	case []any, []string:
		return "a list"
	case string:
		if secret {
			return "a string"
		}
		return strconv.Quote(x)
	default:
		if secret {
			return "a value"
		}
		return fmt.Sprintf("%v", x)
	}
}

// scalarString renders a YAML scalar as a string; ok is false for mappings,
// lists and null.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case time.Time:
		return x.Format(time.RFC3339Nano), true
	case fmt.Stringer:
		return x.String(), true
	}
	return "", false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	n, ok := toInt(v)
	return float64(n), ok
}

// decode stores raw (from the merged koanf tree) into v, reporting every
// type mismatch and unknown key at path p.
func (l *loader) decode(raw any, v reflect.Value, p []string, secret bool) {
	t := v.Type()
	switch {
	case t == secondsType:
		if n, ok := raw.(float64); ok && n >= 0 {
			v.SetInt(int64(n * float64(time.Second)))
			return
		}
		if n, ok := toInt(raw); ok && n >= 0 {
			if _, isStr := raw.(string); !isStr {
				v.SetInt(n * int64(time.Second))
				return
			}
		}
		var d Duration
		l.decode(raw, reflect.ValueOf(&d).Elem(), p, secret)
		v.SetInt(int64(d))
		return
	case t == durationType:
		switch x := raw.(type) {
		case string:
			d, err := ParseDuration(x)
			if err != nil {
				if secret {
					err = fmt.Errorf("expected a duration")
				}
				l.errorf(p, "%v", err)
				return
			}
			v.SetInt(int64(d))
		case Duration:
			v.SetInt(int64(x))
		case time.Duration:
			v.SetInt(int64(x))
		default:
			l.errorf(p, "%s is not a duration; write it with a unit, like 10s, 500ms or 1m30s", describe(raw, secret))
		}
		return
	case t == sizeType:
		if n, ok := toInt(raw); ok && n >= 0 {
			if _, isStr := raw.(string); !isStr {
				v.SetInt(n)
				return
			}
		}
		switch x := raw.(type) {
		case string:
			n, err := ParseSize(x)
			if err != nil {
				l.errorf(p, "%v", err)
				return
			}
			v.SetInt(int64(n))
		case Size:
			v.SetInt(int64(x))
		default:
			l.errorf(p, "%s is not a size; write it like 64KiB, 1MiB or 4096 (bytes)", describe(raw, secret))
		}
		return
	}

	switch t.Kind() {
	case reflect.String:
		s, ok := scalarString(raw)
		if !ok {
			l.errorf(p, "expected a single value (a string), not %s", describe(raw, secret))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		switch x := raw.(type) {
		case bool:
			v.SetBool(x)
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				v.SetBool(true)
			case "false":
				v.SetBool(false)
			default:
				l.errorf(p, "%s is not a boolean; use true or false", describe(raw, secret))
			}
		default:
			l.errorf(p, "%s is not a boolean; use true or false", describe(raw, secret))
		}
	case reflect.Int:
		n, ok := toInt(raw)
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			l.errorf(p, "%s is not a whole number; write digits, like 64", describe(raw, secret))
			return
		}
		v.SetInt(n)
	case reflect.Float64:
		f, ok := toFloat(raw)
		if !ok {
			l.errorf(p, "%s is not a number; write it like -10 or 0.5", describe(raw, secret))
			return
		}
		v.SetFloat(f)
	case reflect.Slice: // []string
		var items []string
		switch x := raw.(type) {
		case []any:
			for i, it := range x {
				s, ok := scalarString(it)
				if !ok {
					l.errorf(p, "item %d: expected a single value (a string), not %s", i+1, describe(it, secret))
					continue
				}
				items = append(items, s)
			}
		case []string:
			items = append(items, x...)
		case string: // environment or command line: comma-separated
			for _, s := range strings.Split(x, ",") {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
		case nil:
		default:
			l.errorf(p, "expected a list, like [a, b], not %s", describe(raw, secret))
			return
		}
		if items == nil {
			items = []string{}
		}
		v.Set(reflect.ValueOf(items))
	case reflect.Interface: // free-form
		if raw != nil {
			v.Set(reflect.ValueOf(copyAny(raw)))
		}
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok && raw != nil {
			l.errorf(p, "expected a mapping (key: value lines), not %s", describe(raw, secret))
			return
		}
		out := reflect.MakeMapWithSize(t, len(m))
		for _, k := range sortedKeys(m) {
			ev := reflect.New(t.Elem()).Elem()
			l.decode(m[k], ev, append(append([]string(nil), p...), k), secret)
			out.SetMapIndex(reflect.ValueOf(k), ev)
		}
		v.Set(out)
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok && raw != nil {
			l.errorf(p, "expected a mapping (key: value lines), not %s", describe(raw, false))
			return
		}
		fs := structFields(t)
		var extra reflect.Value
		if fs.inline >= 0 {
			extra = reflect.MakeMap(t.Field(fs.inline).Type)
			v.Field(fs.inline).Set(extra)
		}
		for _, k := range sortedKeys(m) {
			kp := append(append([]string(nil), p...), k)
			if i, ok := fs.byName[k]; ok {
				l.decode(m[k], v.Field(i), kp, fs.secret[k])
				continue
			}
			if extra.IsValid() {
				ev := reflect.New(extra.Type().Elem()).Elem()
				l.decode(m[k], ev, kp, false)
				extra.SetMapIndex(reflect.ValueOf(k), ev)
				continue
			}
			msg := "unknown key"
			if s := suggestKey(kp, fs.names); s != "" {
				msg += "; did you mean " + s + "?"
			} else if len(p) > 0 {
				msg += "; the keys under " + dotted(p) + " are " + strings.Join(fs.names, ", ")
			} else {
				msg += "; the top-level keys are " + strings.Join(fs.names, ", ")
			}
			l.errorf(kp, "%s", msg)
		}
	default:
		panic("config: unsupported field type " + t.String())
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// copyAny deep-copies a free-form YAML value.
func copyAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyAny(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyAny(e)
		}
		return out
	}
	return v
}
