package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"sort"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/internal/memtrim"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

var (
	pluginNameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	serviceNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// MaxResultBytes bounds a result's JSON, so that a runaway handler cannot
// push an arbitrarily large message to the host (go-plugin's client accepts
// up to 2 GiB). The host applies its own, much smaller, limit
// (services.max_result) with its own message.
const MaxResultBytes = 4<<20 - 64<<10

// server implements the contract for a Plugin.
type server struct {
	p        Plugin
	services map[string]*compiledService
	order    []string

	configureMu sync.Mutex // one Configure at a time
	trim        *memtrim.Trimmer

	mu           sync.Mutex
	configured   bool
	configureErr error // the last rejection while not configured
}

type compiledService struct {
	Service
	schema *compiledSchema
}

var _ pluginv1.Server = (*server)(nil)

// Validate checks a Plugin the way Serve does before serving it: names,
// descriptions, handlers, and that every schema is a valid JSON Schema for an
// object. Use it in a plugin's tests.
func Validate(p Plugin) error {
	_, err := newServer(p)
	return err
}

// Local returns the plugin as an in-process contract client, without
// go-plugin: the same validation, dispatch, error results and panic
// recovery as when served. It is meant for tests.
func Local(p Plugin) (pluginv1.Client, error) {
	return newServer(p)
}

func newServer(p Plugin) (*server, error) {
	var errs []error
	if !pluginNameRE.MatchString(p.Name) {
		errs = append(errs, fmt.Errorf("plugin name %q: use 1-64 lower case letters, digits, '_' or '-'", p.Name))
	}
	if p.Version == "" {
		errs = append(errs, errors.New("plugin version is empty"))
	}
	if len(p.Services) == 0 {
		errs = append(errs, errors.New("plugin offers no services"))
	}
	s := &server{p: p, services: map[string]*compiledService{}}
	for i, svc := range p.Services {
		where := fmt.Sprintf("service %q", svc.Name)
		if svc.Name == "" {
			where = fmt.Sprintf("service #%d", i+1)
		}
		if !serviceNameRE.MatchString(svc.Name) {
			errs = append(errs, fmt.Errorf("%s: name must be 1-64 letters, digits, '_' or '-'", where))
		}
		if _, dup := s.services[svc.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: offered twice", where))
		}
		if svc.Description == "" {
			errs = append(errs, fmt.Errorf("%s: description is empty (the voice server's model picks services by it)", where))
		}
		if svc.Handler == nil {
			errs = append(errs, fmt.Errorf("%s: no handler", where))
		}
		if svc.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s: negative timeout", where))
		}
		if svc.schemaErr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, svc.schemaErr))
			continue
		}
		cs, err := compileSchema(svc.Name, svc.Schema)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		s.services[svc.Name] = &compiledService{Service: svc, schema: cs}
		s.order = append(s.order, svc.Name)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if p.Configure == nil {
		s.configured = true
	}
	return s, nil
}

func (s *server) Describe(context.Context) (*pluginv1.Description, error) {
	d := &pluginv1.Description{Name: s.p.Name, Version: s.p.Version, SDK: Version}
	for _, name := range s.order {
		svc := s.services[name]
		d.Services = append(d.Services, pluginv1.ServiceSpec{
			Name:        svc.Name,
			Description: svc.Description,
			Parameters:  json.RawMessage(svc.schema.text),
			Timeout:     svc.Timeout,
		})
	}
	return d, nil
}

func (s *server) Configure(_ context.Context, config json.RawMessage) error {
	if s.p.Configure == nil {
		warnIgnoredConfig(config)
		return nil
	}
	if len(config) == 0 || string(config) == "null" {
		config = json.RawMessage("{}")
	}
	s.configureMu.Lock()
	defer s.configureMu.Unlock()
	err := s.configure(config)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.configured, s.configureErr = true, nil
		return nil
	}
	if !s.configured {
		s.configureErr = err
	}
	return &pluginv1.ConfigError{Message: err.Error()}
}

// warnIgnoredConfig warns that a plugin without a Configure function got a
// non-empty config. The config may hold API keys, so only its top-level key
// names (sorted) are logged, never its values.
func warnIgnoredConfig(config json.RawMessage) {
	trimmed := bytes.TrimSpace(config)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		slog.Warn("plugin takes no configuration; ignoring it (it is not a JSON object)")
		return
	}
	if len(obj) == 0 {
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	slog.Warn("plugin takes no configuration; ignoring it", "keys", keys)
}

func (s *server) configure(config json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("Configure panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error in the plugin while configuring (panic: %v)", r)
		}
	}()
	return s.p.Configure(config)
}

func (s *server) notConfigured() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configured {
		return nil
	}
	if s.configureErr != nil {
		return fmt.Errorf("plugin %s is not configured: its config was rejected: %v", s.p.Name, s.configureErr)
	}
	return fmt.Errorf("plugin %s is not configured yet", s.p.Name)
}

func (s *server) Call(ctx context.Context, method string, params json.RawMessage) (_ json.RawMessage, err error) {
	defer s.trim.Busy()
	svc, ok := s.services[method]
	if !ok {
		return nil, pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_UNKNOWN_METHOD, "plugin %s has no service %q", s.p.Name, method)
	}
	if err := s.notConfigured(); err != nil {
		return nil, &pluginv1.CallError{Kind: pluginv1.ErrorKind_ERROR_KIND_NOT_CONFIGURED, Message: err.Error()}
	}
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := svc.schema.validate(params); err != nil {
		return nil, pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, "invalid params for %s: %v", method, err)
	}
	p, err := NewParams(params)
	if err != nil {
		return nil, pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_INVALID_PARAMS, "invalid params for %s: %v", method, err)
	}
	defer func() {
		if r := recover(); r != nil {
			slog.Error("service handler panicked", "service", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_PANIC, "%s failed because of an internal error in plugin %s", method, s.p.Name)
		}
	}()
	v, err := svc.Handler(ctx, p)
	if ctx.Err() != nil {
		// The caller has given up (deadline or cancel); the contract says so
		// with the gRPC status, whatever the handler returned.
		return nil, fmt.Errorf("call %s: %w", method, status.FromContextError(ctx.Err()).Err())
	}
	if err != nil {
		return nil, handlerError(method, err)
	}
	data, err := encodeResult(v)
	if err != nil {
		slog.Error("cannot encode result", "service", method, "error", err)
		return nil, pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_FAILED, "%s failed: its result could not be encoded", method)
	}
	if len(data) > MaxResultBytes {
		slog.Error("result too large", "service", method, "bytes", len(data))
		return nil, pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_FAILED, "%s failed: its result is too large (%d bytes)", method, len(data))
	}
	return data, nil
}

func handlerError(method string, err error) error {
	if ce, ok := pluginv1.AsCallError(err); ok {
		return ce
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// A deadline of the handler's own (the call's has not passed).
		return pluginv1.NewCallError(pluginv1.ErrorKind_ERROR_KIND_FAILED, "%s did not finish in time: %v", method, err)
	}
	return &pluginv1.CallError{Kind: pluginv1.ErrorKind_ERROR_KIND_FAILED, Message: err.Error()}
}

func encodeResult(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case json.RawMessage:
		if len(v) == 0 {
			return json.RawMessage("null"), nil
		}
		if !json.Valid(v) {
			return nil, errors.New("json.RawMessage result is not valid JSON")
		}
		return v, nil
	}
	return json.Marshal(v)
}

func (s *server) Health(ctx context.Context) (err error) {
	if err := s.notConfigured(); err != nil {
		return err
	}
	if s.p.Health == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			slog.Error("Health panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("health check panicked: %v", r)
		}
	}()
	return s.p.Health(ctx)
}
