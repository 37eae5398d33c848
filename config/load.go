package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env"
	"github.com/knadh/koanf/v2"
	yamlv3 "go.yaml.in/yaml/v3"
)

// Error is returned by Load when the configuration is invalid. Each entry of
// Problems is one line that says where, which key, what is wrong and what to
// do. No entry contains a secret.
type Error struct {
	Problems []string
	// Warnings found along the way (see Config.Warnings).
	Warnings []string
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "config: " + e.Problems[0]
	}
	return fmt.Sprintf("config: %d problems:\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// Load builds the effective configuration from the defaults, the YAML file
// at path, AGENTHOST_* environment variables and overrides (dotted key ->
// value; values may be strings as typed on a command line, or typed values),
// in that order, and validates it.
//
// path "" means defaults, environment and overrides only. A missing file at
// DefaultPath is not an error; a missing file at any other path is.
//
// When the configuration is wrong (syntax, keys, types, values) the error is
// an *Error listing every problem; a file that cannot be read gives a plain
// error. Warnings that do not stop the daemon are in the returned Config's
// Warnings.
func Load(path string, overrides map[string]any) (*Config, error) {
	l := &loader{lines: map[string]int{}, origin: map[string]string{}, failed: map[string]bool{}}
	k := koanf.New(".")

	def, err := toMap(Default())
	if err != nil {
		return nil, fmt.Errorf("config: defaults: %w", err)
	}
	if err := k.Load(confmap.Provider(def, ""), nil); err != nil {
		return nil, fmt.Errorf("config: defaults: %w", err)
	}

	loaded := ""
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			loaded = path
			l.file = path
			m, err := l.parseFile(b)
			if err != nil {
				return nil, err
			}
			if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
				return nil, fmt.Errorf("config: %s: %w", path, err)
			}
		case errors.Is(err, fs.ErrNotExist) && path == DefaultPath:
			// No file at the default place: defaults and environment apply.
		default:
			return nil, fmt.Errorf("config: %w", err)
		}
	}

	if err := k.Load(env.ProviderWithValue(EnvPrefix, ".", l.envKey), nil); err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	if len(overrides) > 0 {
		if err := k.Load(confmap.Provider(l.overrideMap(overrides), ""), nil); err != nil {
			return nil, fmt.Errorf("config: overrides: %w", err)
		}
	}

	c := &Config{}
	l.decode(k.Raw(), reflect.ValueOf(c).Elem(), nil, false)
	c.MCP.Order = l.fileOrder([]string{"mcp", "servers"}, slices.Collect(maps.Keys(c.MCP.Servers)))
	l.validating = true
	l.validate(c)
	if len(l.problems) > 0 {
		sort.SliceStable(l.problems, func(i, j int) bool {
			a, b := l.problems[i].line, l.problems[j].line
			return a != 0 && (b == 0 || a < b)
		})
		e := &Error{Warnings: l.warnings}
		for _, p := range l.problems {
			e.Problems = append(e.Problems, p.text)
		}
		return nil, e
	}
	c.Path = loaded
	c.Warnings = l.warnings
	return c, nil
}

// ParseSets turns command-line settings of the form key=value (e.g.
// "server.address=10.0.0.2:8009") into an overrides map for Load.
//
// A malformed setting is named by its position (1 = the first --set), never
// by its text: "server.token:SECRET" (":" typed for "=") must not print the
// secret.
func ParseSets(sets []string) (map[string]any, error) {
	out := make(map[string]any, len(sets))
	for i, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return nil, fmt.Errorf("config: --set argument %d is not KEY=VALUE (e.g. server.address=127.0.0.1:8009)", i+1)
		}
		if k == "" {
			return nil, fmt.Errorf("config: --set argument %d has no KEY before \"=\" (KEY=VALUE, e.g. server.address=127.0.0.1:8009)", i+1)
		}
		out[k] = v
	}
	return out, nil
}

type problem struct {
	line int
	text string
}

// loader carries the state of one Load: where each key came from, and the
// problems and warnings found.
type loader struct {
	file     string
	lines    map[string]int    // path key -> line in file
	origin   map[string]string // path key -> "environment X" / "override"
	problems []problem
	warnings []string
	mcpAlias bool // the file used the top-level mcpServers key

	validating bool            // decoding is done; now checking values
	failed     map[string]bool // path keys that failed to decode
}

func pathKey(p []string) string { return strings.Join(p, "\x00") }
func dotted(p []string) string  { return strings.Join(p, ".") }

// where says where the value at p (or its closest set parent) came from, and
// the file line if it came from the file.
func (l *loader) where(p []string) (string, int) {
	for i := len(p); i > 0; i-- {
		pk := pathKey(p[:i])
		if o, ok := l.origin[pk]; ok {
			return o, 0
		}
		if n, ok := l.lines[pk]; ok {
			return fmt.Sprintf("%s:%d", l.file, n), n
		}
	}
	return "", 0
}

func (l *loader) errorf(p []string, format string, args ...any) {
	if l.validating {
		// A key that could not be decoded holds a zero value; say nothing
		// more about it.
		for i := len(p); i > 0; i-- {
			if l.failed[pathKey(p[:i])] {
				return
			}
		}
	} else {
		l.failed[pathKey(p)] = true
	}
	w, line := l.where(p)
	msg := dotted(p) + ": " + fmt.Sprintf(format, args...)
	if w != "" {
		msg = w + ": " + msg
	}
	l.problems = append(l.problems, problem{line, msg})
}

func (l *loader) warnf(p []string, format string, args ...any) {
	w, _ := l.where(p)
	msg := dotted(p) + ": " + fmt.Sprintf(format, args...)
	if w != "" {
		msg = w + ": " + msg
	}
	l.warnings = append(l.warnings, msg)
}

// parseFile parses the YAML file, records the line of every key, applies the
// mcpServers alias and drops null values of known keys (null = default).
func (l *loader) parseFile(b []byte) (map[string]any, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		// "yaml: line 3: did not find expected key" -> "<file>:3: did not ..."
		msg := tabNamed(b, strings.TrimPrefix(err.Error(), "yaml: "))
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			return nil, &Error{Problems: []string{l.file + ":" + rest + " (YAML syntax)"}}
		}
		return nil, &Error{Problems: []string{l.file + ": " + msg + " (YAML syntax)"}}
	}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind != yamlv3.MappingNode && !(root.Kind == yamlv3.ScalarNode && root.Tag == "!!null") {
			return nil, &Error{Problems: []string{fmt.Sprintf("%s:%d: the file must be a mapping of keys (server:, log:, ...)", l.file, root.Line)}}
		}
		l.recordLines(root, nil)
	}
	var m map[string]any
	if err := doc.Decode(&m); err != nil {
		var te *yamlv3.TypeError
		if errors.As(err, &te) {
			// e.g. "line 3: mapping key "level" already defined at line 2"
			var lines []string
			for _, e := range te.Errors {
				lines = append(lines, l.file+":"+strings.TrimPrefix(e, "line "))
			}
			return nil, &Error{Problems: lines}
		}
		return nil, &Error{Problems: []string{l.file + ": " + err.Error()}}
	}
	if m == nil {
		m = map[string]any{}
	}
	if alias, ok := m["mcpServers"]; ok {
		l.mcpAlias = true
		delete(m, "mcpServers")
		mcp, _ := m["mcp"].(map[string]any)
		if mcp == nil {
			mcp = map[string]any{}
			m["mcp"] = mcp
		}
		if _, both := mcp["servers"]; both {
			l.errorf([]string{"mcp", "servers"}, "given both as mcpServers and as mcp.servers; keep one")
		} else {
			mcp["servers"] = alias
		}
	}
	l.dropObsolete(m)
	dropNulls(m, reflect.TypeOf(Config{}))
	return m, nil
}

// tabNamed adds to the YAML parser's "found character that cannot start
// any token" that the character is a tab, when the line it names (or, with
// no line, the file) is indented with one.
func tabNamed(b []byte, msg string) string {
	if !strings.HasSuffix(msg, "found character that cannot start any token") {
		return msg
	}
	lines := strings.Split(string(b), "\n")
	indented := func(line string) bool {
		return strings.Contains(line[:len(line)-len(strings.TrimLeft(line, " \t"))], "\t")
	}
	tab := slices.ContainsFunc(lines, indented)
	var n int
	if _, err := fmt.Sscanf(msg, "line %d:", &n); err == nil && n >= 1 && n <= len(lines) {
		tab = indented(lines[n-1])
	}
	if !tab {
		return msg
	}
	return msg + ": a tab; YAML indents with spaces"
}

// obsoleteKeys are keys that earlier versions had and nothing reads any
// more: dotted key -> why. In the file they draw a warning and are dropped
// (so an old file still loads); from the environment or an override they
// are unknown keys like any other.
var obsoleteKeys = map[string]string{
	"conversation.vad":  "the voice server detects speech itself",
	"mcp.serve.enabled": "mcp.serve.listen alone turns the MCP endpoint on",
}

// dropObsolete removes obsoleteKeys from the parsed file, with a warning each.
func (l *loader) dropObsolete(m map[string]any) {
	keys := make([]string, 0, len(obsoleteKeys))
	for k := range obsoleteKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		p := path(key)
		parent := m
		for _, seg := range p[:len(p)-1] {
			parent, _ = parent[seg].(map[string]any)
		}
		if _, ok := parent[p[len(p)-1]]; !ok {
			continue
		}
		delete(parent, p[len(p)-1])
		l.warnf(p, "obsolete and ignored (%s); remove it", obsoleteKeys[key])
	}
}

func (l *loader) recordLines(n *yamlv3.Node, p []string) {
	if n.Kind != yamlv3.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		kp := append(append([]string(nil), p...), key.Value)
		if len(p) == 0 && key.Value == "mcpServers" {
			kp = []string{"mcp", "servers"}
		}
		if _, seen := l.lines[pathKey(kp)]; !seen {
			l.lines[pathKey(kp)] = key.Line
		}
		l.recordLines(val, kp)
	}
}

// fileOrder sorts the keys below p in the order the file has them; keys
// not in the file follow, sorted.
func (l *loader) fileOrder(p []string, keys []string) []string {
	line := make(map[string]int, len(keys))
	for _, k := range keys {
		if n, ok := l.lines[pathKey(append(append([]string(nil), p...), k))]; ok {
			line[k] = n
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, aok := line[keys[i]]
		b, bok := line[keys[j]]
		if aok != bok {
			return aok
		}
		if a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}

// dropNulls deletes keys with null values where t is a struct type, so that
// "key:" with no value keeps the default. Free-form maps keep their nulls.
func dropNulls(m map[string]any, t reflect.Type) {
	if t.Kind() != reflect.Struct {
		return
	}
	fields := structFields(t)
	for k, v := range m {
		f, ok := fields.byName[k]
		if !ok {
			continue
		}
		if v == nil {
			delete(m, k)
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			dropNulls(sub, t.Field(f).Type)
		}
	}
}

// toMap turns a Config into the nested map form koanf holds, the same form
// the YAML file has.
func toMap(c *Config) (map[string]any, error) {
	b, err := yamlv3.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, yamlv3.Unmarshal(b, &m)
}

// envKey maps an AGENTHOST_* variable to its config key (koanf env callback).
// The variables that are documented but are not config keys (see
// envIgnored) are skipped. Any other unknown variable is a problem naming it
// and the closest valid one; its value is never shown.
func (l *loader) envKey(name, value string) (string, any) {
	if envIgnored(name) {
		return "", nil
	}
	vars := envVars()
	if p, ok := vars[name]; ok {
		l.origin[pathKey(p)] = "environment " + name
		return dotted(p), value
	}
	for _, m := range freeMapPaths() {
		prefix := envName(m) + "_"
		if strings.HasPrefix(name, prefix) {
			l.problems = append(l.problems, problem{0, fmt.Sprintf(
				"environment %s: free-form entries of %s cannot be set from the environment; set them in the config file or with an override", name, dotted(m))})
			return "", nil
		}
	}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	msg := fmt.Sprintf("environment %s: no config key has this name", name)
	if best := closest(name, names, len(name)); best != "" {
		msg += "; did you mean " + best + "?"
	}
	l.problems = append(l.problems, problem{0, msg})
	return "", nil
}

// envIgnored reports whether name is an AGENTHOST_ variable that is not a
// config key but is read elsewhere: EnvConfigPath (the CLI),
// EnvPluginPrefix* (plugins), EnvAudioVerbose (the audio package) and
// EnvProcessTree (the host's tag on its children), EnvLongTests (the test
// suite's switch, which the daemons its tests start inherit).
func envIgnored(name string) bool {
	return name == EnvConfigPath || name == EnvAudioVerbose || name == EnvProcessTree || name == EnvLongTests || strings.HasPrefix(name, EnvPluginPrefix)
}

// EnvLongTests is internal/longtest's switch: scripts/test.sh sets it for
// the long test material.
const EnvLongTests = "AGENTHOST_LONG_TESTS"

func envName(p []string) string { return EnvPrefix + strings.ToUpper(strings.Join(p, "_")) }

// envVars maps every variable name to the leaf key it sets.
func envVars() map[string][]string {
	out := map[string][]string{}
	for _, p := range leafPaths(reflect.TypeOf(Config{}), nil) {
		out[envName(p)] = p
	}
	return out
}

// leafPaths lists the keys of t that hold a single value or list (not maps,
// not struct subtrees, not inline extras).
func leafPaths(t reflect.Type, p []string) [][]string {
	var out [][]string
	fs := structFields(t)
	for _, name := range fs.names {
		f := t.Field(fs.byName[name])
		kp := append(append([]string(nil), p...), name)
		switch {
		case f.Type.Kind() == reflect.Struct:
			out = append(out, leafPaths(f.Type, kp)...)
		case f.Type.Kind() == reflect.Map:
		default:
			out = append(out, kp)
		}
	}
	return out
}

// freeMapPaths lists the keys whose value is a map with user-chosen keys.
func freeMapPaths() [][]string {
	var out [][]string
	var walk func(t reflect.Type, p []string)
	walk = func(t reflect.Type, p []string) {
		fs := structFields(t)
		for _, name := range fs.names {
			f := t.Field(fs.byName[name])
			kp := append(append([]string(nil), p...), name)
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type, kp)
			case reflect.Map:
				out = append(out, kp)
			}
		}
		if fs.inline >= 0 && len(p) > 0 {
			out = append(out, p)
		}
	}
	walk(reflect.TypeOf(Config{}), nil)
	return out
}

// knownPaths lists every fixed key (leaves and subtrees), for suggestions.
func knownPaths() [][]string {
	var out [][]string
	var walk func(t reflect.Type, p []string)
	walk = func(t reflect.Type, p []string) {
		fs := structFields(t)
		for _, name := range fs.names {
			f := t.Field(fs.byName[name])
			kp := append(append([]string(nil), p...), name)
			out = append(out, kp)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, kp)
			}
		}
	}
	walk(reflect.TypeOf(Config{}), nil)
	return out
}

// overrideMap turns dotted override keys into a nested map, checking each
// key. Below a map with free-form keys whose values are single values, the
// rest of the dotted key is the map key (so "services.timeouts.a.b" sets the
// timeout of service "a.b"); below one whose values are structs, the map
// key runs up to the first of their keys (so
// "conversation.wake_word.per_model./opt/mine.onnx.over" sets over of
// /opt/mine.onnx).
func (l *loader) overrideMap(ov map[string]any) map[string]any {
	out := map[string]any{}
	keys := make([]string, 0, len(ov))
	for k := range ov {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		p, ok := l.resolveOverride(key)
		if !ok {
			continue
		}
		l.origin[pathKey(p)] = "override"
		m := out
		for _, seg := range p[:len(p)-1] {
			sub, ok := m[seg].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[seg] = sub
			}
			m = sub
		}
		m[p[len(p)-1]] = ov[key]
	}
	return out
}

func (l *loader) resolveOverride(key string) ([]string, bool) {
	segs := strings.Split(key, ".")
	t := reflect.TypeOf(Config{})
	var p []string
	bad := func(i int) ([]string, bool) {
		full := append(append([]string(nil), p...), segs[i])
		msg := fmt.Sprintf("override: %s: unknown key", key)
		var siblings []string
		if t.Kind() == reflect.Struct {
			siblings = structFields(t).names
		}
		if s := suggestKey(full, siblings); s != "" {
			msg += "; did you mean " + s + "?"
		}
		l.problems = append(l.problems, problem{0, msg})
		return nil, false
	}
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		switch t.Kind() {
		case reflect.Struct:
			fs := structFields(t)
			if f, ok := fs.byName[seg]; ok {
				p = append(p, seg)
				t = t.Field(f).Type
				continue
			}
			if fs.inline >= 0 {
				return append(p, strings.Join(segs[i:], ".")), true
			}
			return bad(i)
		case reflect.Map:
			if e := t.Elem(); e.Kind() == reflect.Struct || e.Kind() == reflect.Interface {
				// A map key may hold dots (a model's path: mine.onnx): it
				// runs up to the first of e's fields.
				j := i + 1
				if e.Kind() == reflect.Struct && structFields(e).inline < 0 {
					for ; j < len(segs)-1; j++ {
						if _, ok := structFields(e).byName[segs[j]]; ok {
							break
						}
					}
				}
				p = append(p, strings.Join(segs[i:j], "."))
				i = j - 1
				t = e
				continue
			}
			return append(p, strings.Join(segs[i:], ".")), true
		case reflect.Interface:
			p = append(p, seg)
			continue
		default:
			return bad(i)
		}
	}
	if seg := segs[len(segs)-1]; seg == "" {
		return bad(len(segs) - 1)
	}
	return p, true
}
