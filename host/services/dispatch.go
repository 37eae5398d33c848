package services

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/internal/clip"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agenthost/agenthost/internal/stall"
	"github.com/agenthost/agenthost/proto/voice"
)

// Defaults of DispatchOptions.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxResult   = 64 << 10
	DefaultMaxInFlight = 64
	// DefaultMaxInFlightPerProvider is a quarter of DefaultMaxInFlight: a
	// hung provider leaves three quarters of the slots to the others.
	DefaultMaxInFlightPerProvider = 16
)

// DispatchOptions configures a Dispatcher. Zero values take the defaults.
type DispatchOptions struct {
	// Timeout is the deadline of a call whose service names none (default 10s).
	Timeout time.Duration
	// Timeouts maps a registered service name (prefix included) to its
	// deadline; it wins over the provider's Service.Timeout, so the config's
	// services.timeouts can always raise a limit.
	Timeouts map[string]time.Duration
	// MaxResult bounds a result's data, and a provider's error text, in bytes
	// (default 64 KiB).
	MaxResult int
	// MaxInFlight bounds the voice server's calls running at once (default
	// 64); other callers have a Budget of their own (DispatchFrom).
	MaxInFlight int
	// MaxInFlightPerProvider bounds the voice server's calls running at once
	// on one provider (default 16): a provider that never answers takes no
	// more than this of MaxInFlight, and the others keep answering.
	MaxInFlightPerProvider int
	// Log receives one record per call: debug on success, info on failure,
	// error with a stack for a provider panic. The caller adds its own
	// attributes (component=…). Nil discards.
	Log *slog.Logger
}

// Dispatcher runs the server's calls against a Registry: it looks the
// service up, validates the params against its schema, and runs the provider
// under a deadline, turning whatever happens into exactly one voice.Outcome.
type Dispatcher struct {
	reg    *Registry
	limits atomic.Pointer[DispatchOptions] // replaced whole by SetLimits
	log    *slog.Logger

	mu       sync.Mutex
	inFlight int            // all calls
	voice    int            // the calls without a Budget, bounded by MaxInFlight
	voiceBy  map[string]int // those by provider ID (only providers with calls)
	ids      map[string]struct{}
}

// NewDispatcher returns a dispatcher for the services of r.
func NewDispatcher(r *Registry, opts DispatchOptions) *Dispatcher {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{reg: r, log: log, ids: make(map[string]struct{}), voiceBy: make(map[string]int)}
	d.SetLimits(opts)
	return d
}

// SetLimits replaces the deadlines and bounds (Timeout, Timeouts,
// MaxResult, MaxInFlight, MaxInFlightPerProvider) for the calls that start from now on; Log is
// ignored. A configuration reload uses it.
func (d *Dispatcher) SetLimits(opts DispatchOptions) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResult <= 0 {
		opts.MaxResult = DefaultMaxResult
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxInFlightPerProvider <= 0 {
		opts.MaxInFlightPerProvider = DefaultMaxInFlightPerProvider
	}
	timeouts := make(map[string]time.Duration, len(opts.Timeouts))
	for k, v := range opts.Timeouts {
		if v > 0 {
			timeouts[k] = v
		}
	}
	opts.Timeouts = timeouts
	opts.Log = nil
	d.limits.Store(&opts)
}

func (d *Dispatcher) opts() *DispatchOptions { return d.limits.Load() }

// Check reports whether the dispatcher makes progress (its lock is not held
// for good), for the watchdog.
func (d *Dispatcher) Check(ctx context.Context) error {
	if err := stall.Lock(ctx, &d.mu); err != nil {
		return fmt.Errorf("the dispatcher: %w", err)
	}
	return nil
}

// InFlight returns the number of calls running now, of every caller
// (the voice server's and those with a Budget). A call counts from the
// moment Dispatch accepts it until its provider returns, so a call abandoned
// at its deadline counts until the provider lets go.
func (d *Dispatcher) InFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight
}

// Dispatch runs one call and returns its outcome. It blocks until the
// provider answers, the deadline passes (the provider may go on running; its
// late answer is dropped) or ctx ends. It always returns exactly one outcome
// and never panics. Errors are for a person to read:
//
//	unknown service "x"; registered: a, b, c
//	invalid parameters for get_current_time: format: must be one of "simple", "detailed" (got "fancy")
//	get_x did not answer within 10s; it may still be running (raise services.timeouts.get_x)
//	get_x failed: internal error in plugin:foo
//	result of get_x is 70000 bytes, over the 64 KiB limit (services.max_result)
//	busy: 64 calls in flight
//	busy: 16 calls to mcp:fs in flight (services.max_in_flight_per_provider)
//	duplicate call_id "c1": a call with this id is still running
//
// A provider's own error is passed through as its text. A provider that
// returns no data (nil or empty) answers success with data "" — the seeds'
// results are strings, and an empty string keeps the data field present.
func (d *Dispatcher) Dispatch(ctx context.Context, c voice.Call) voice.Outcome {
	return d.DispatchFrom(ctx, c, nil, "")
}

// DispatchFrom is Dispatch for a caller other than the voice server: the
// call counts against b (per client too) instead of MaxInFlight. A nil b
// is the voice server's budget.
func (d *Dispatcher) DispatchFrom(ctx context.Context, c voice.Call, b *Budget, client string) (out voice.Outcome) {
	start := time.Now()
	method := c.Method
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() {
		if v := recover(); v != nil {
			d.log.Error("dispatch panicked", "method", method, "call_id", c.CallID, "panic", v, "stack", string(debug.Stack()))
			out = failure(fmt.Sprintf("%s failed: internal error in the host", clip.String(method, 64)))
		}
		d.logCall(c, start, out)
	}()

	e, ok := d.reg.Lookup(method)
	if !ok {
		if why := d.reg.Refused(method); why != "" {
			return failure(fmt.Sprintf("service %s is not allowed on this speaker (%s)", quoteShort(method), why))
		}
		if why := d.reg.LeftOutWhy(method); why != "" {
			return failure(why)
		}
		if id := d.reg.HeldBy(method); id != "" {
			return failure(fmt.Sprintf("service %s is not available now: %s, which offers it, is restarting; try again shortly", quoteShort(method), id))
		}
		return failure(d.unknown(method))
	}
	// The provider is known before the slot is taken: its share of the
	// budget is bounded too (a bulkhead per provider).
	sl := slot{id: c.CallID, budget: b, client: client, provider: e.Provider.ID()}
	if msg := d.acquire(sl); msg != "" {
		return failure(msg)
	}
	return d.run(ctx, sl, e, c.Params)
}

// result is what a provider's goroutine hands back.
type result struct {
	data     json.RawMessage
	err      error
	panicked bool
	invalid  string // the params are not valid: why
}

// inlineParams bounds the params whose validation may run on the caller's
// goroutine; larger ones are validated on the call's own, so that the
// call's deadline bounds their validation too.
const inlineParams = 4 << 10

// validate checks a call's params (checkParams; tests replace it).
var validate = checkParams

// run validates the params and calls the provider under the service's
// deadline, in a goroutine of its own unless the provider honours its
// context and the params are small. The goroutine releases the call's slot
// when the provider returns.
func (d *Dispatcher) run(ctx context.Context, sl slot, e Entry, params json.RawMessage) voice.Outcome {
	timeout := d.timeoutFor(e)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res result
	if honorsContext(e.Provider) && len(params) <= inlineParams {
		// It returns once cctx ends: no goroutine (and no hand-off) needed.
		res = d.call(cctx, e, params)
		d.release(sl)
	} else {
		done := make(chan result, 1) // never blocks the goroutine, even when nobody waits
		go func() {
			res := d.call(cctx, e, params)
			d.release(sl)
			done <- res
		}()
		select {
		case res = <-done:
		case <-cctx.Done():
			select {
			case res = <-done: // answered just in time: prefer the answer
			default:
				return d.late(ctx, e, timeout)
			}
		}
	}
	switch {
	case res.invalid != "":
		return failure(res.invalid)
	case res.panicked:
		return failure(fmt.Sprintf("%s failed: internal error in %s", e.Name, e.Provider.ID()))
	case res.err != nil:
		// A provider may see the deadline pass (by the clock) a moment
		// before cctx's own timer fires.
		dl, _ := cctx.Deadline()
		expired := cctx.Err() != nil || !time.Now().Before(dl)
		if expired && (errors.Is(res.err, context.DeadlineExceeded) || errors.Is(res.err, context.Canceled)) {
			return d.late(ctx, e, timeout)
		}
		text := res.err.Error()
		if text == "" {
			text = e.Name + " failed"
		}
		return failure(clip.String(text, d.opts().MaxResult))
	}
	data := bytes.TrimSpace(res.data)
	if len(data) == 0 {
		return voice.Outcome{Success: true, Data: json.RawMessage(`""`)}
	}
	if len(data) > d.opts().MaxResult {
		return failure(fmt.Sprintf("result of %s is %d bytes, over the %s limit (services.max_result)", e.Name, len(data), SizeText(d.opts().MaxResult)))
	}
	if !json.Valid(data) {
		return failure(fmt.Sprintf("%s failed: %s returned data that is not valid JSON", e.Name, e.Provider.ID()))
	}
	return voice.Outcome{Success: true, Data: json.RawMessage(data)}
}

// late answers a call whose deadline passed or whose ctx ended.
func (d *Dispatcher) late(ctx context.Context, e Entry, timeout time.Duration) voice.Outcome {
	if err := ctx.Err(); err != nil {
		return failure(fmt.Sprintf("%s was cancelled: %v", e.Name, context.Cause(ctx)))
	}
	return failure(fmt.Sprintf("%s did not answer within %s; it may still be running (raise services.timeouts.%s)", e.Name, timeout, e.Name))
}

// call validates the params and runs the provider, turning a panic into a
// result and logging it. After a validation that outlasted ctx the provider
// gets an ended ctx, like one that was slow to start.
func (d *Dispatcher) call(ctx context.Context, e Entry, raw json.RawMessage) (res result) {
	validated := false
	defer func() {
		if v := recover(); v != nil {
			if !validated {
				d.log.Error("validation panicked", "method", e.Name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				res = result{invalid: fmt.Sprintf("%s failed: internal error in the host", e.Name)}
				return
			}
			d.log.Error("provider panicked", "method", e.Name, "provider", e.Provider.ID(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res = result{panicked: true}
		}
	}()
	params, msg := validate(e, raw)
	if msg != "" {
		return result{invalid: msg}
	}
	validated = true
	data, err := e.Provider.Call(ctx, e.Service.Name, params)
	return result{data: data, err: err}
}

// timeoutFor picks a call's deadline: the config's services.timeouts for the
// registered name (or the unprefixed one), else the service's own, else the
// default.
func (d *Dispatcher) timeoutFor(e Entry) time.Duration {
	if t, ok := d.opts().Timeouts[e.Name]; ok {
		return t
	}
	if t, ok := d.opts().Timeouts[e.Service.Name]; ok {
		return t
	}
	if e.Service.Timeout > 0 {
		return e.Service.Timeout
	}
	return d.opts().Timeout
}

// slot is what a running call holds: its id, the budget it counts
// against (nil: MaxInFlight) with its client, and its provider's ID.
type slot struct {
	id       string
	budget   *Budget
	client   string
	provider string
}

// acquire takes a slot for a call, or says why it cannot run. An empty
// call_id is not tracked for duplicates.
func (d *Dispatcher) acquire(s slot) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.id != "" {
		if _, dup := d.ids[s.id]; dup {
			return fmt.Sprintf("duplicate call_id %s: a call with this id is still running", quoteShort(s.id))
		}
	}
	if s.budget == nil {
		o := d.opts()
		if d.voice >= o.MaxInFlight {
			return fmt.Sprintf("busy: %d calls in flight", d.voice)
		}
		if n := d.voiceBy[s.provider]; n >= o.MaxInFlightPerProvider {
			return fmt.Sprintf("busy: %d calls to %s in flight (services.max_in_flight_per_provider)", n, s.provider)
		}
		d.voice++
		d.voiceBy[s.provider]++
	} else if msg := s.budget.take(s.client, s.provider); msg != "" {
		return msg
	}
	d.inFlight++
	if s.id != "" {
		d.ids[s.id] = struct{}{}
	}
	return ""
}

// release gives a call's slot back.
func (d *Dispatcher) release(s slot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inFlight--
	if s.budget == nil {
		d.voice--
		if d.voiceBy[s.provider]--; d.voiceBy[s.provider] <= 0 {
			delete(d.voiceBy, s.provider)
		}
	} else {
		s.budget.give(s.client, s.provider)
	}
	if s.id != "" {
		delete(d.ids, s.id)
	}
}

// maxListed bounds the names an unknown-service error lists.
const maxListed = 30

// unknown explains an unknown method and lists what is registered.
func (d *Dispatcher) unknown(method string) string {
	names := d.reg.Names()
	if len(names) == 0 {
		return fmt.Sprintf("unknown service %s; no services are registered", quoteShort(method))
	}
	list := strings.Join(names[:min(len(names), maxListed)], ", ")
	if len(names) > maxListed {
		list += fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return fmt.Sprintf("unknown service %s; registered: %s", quoteShort(method), list)
}

// validateParams checks params against the service's schema and returns the
// params to pass on ({} when absent or null), or an error message.
func validateParams(e Entry, raw json.RawMessage) (json.RawMessage, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage(`{}`)
	}
	if msg := checkNumbers(raw); msg != "" {
		return nil, fmt.Sprintf(invalidParams+"%s: %s", e.Name, msg)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Sprintf(invalidParams+"%s: not valid JSON (%v)", e.Name, err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return nil, fmt.Sprintf(invalidParams+"%s: params must be a JSON object (got %s)", e.Name, jsonKind(inst))
	}
	if e.Schema == nil {
		return raw, ""
	}
	if err := e.Schema.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, fmt.Sprintf(invalidParams+"%s: %s", e.Name, strings.Join(renderValidation(ve, inst, "parameter"), "; "))
		}
		return nil, fmt.Sprintf(invalidParams+"%s: %v", e.Name, err)
	}
	return raw, ""
}

// SizeText writes a byte count as "64 KiB", "1 MiB" or "1000 bytes", for
// errors that name a bound.
func SizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// failure is an unsuccessful outcome.
func failure(msg string) voice.Outcome {
	return voice.Outcome{Success: false, Error: msg}
}

// invalidParams begins the error of a call whose params do not match the
// service's schema (validateParams).
const invalidParams = "invalid parameters for "

// logCall records one call: debug when it succeeded, info when it failed.
// The error of params that do not match the schema quotes the values the
// model passed (what was said): at info it names the service only, and
// the whole of it is at debug.
func (d *Dispatcher) logCall(c voice.Call, start time.Time, out voice.Outcome) {
	if out.Success && !d.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"method", c.Method, "call_id", c.CallID, "duration", time.Since(start), "success", out.Success}
	if out.Success {
		d.log.Debug("call", attrs...)
		return
	}
	msg := out.Error
	if strings.HasPrefix(msg, invalidParams) {
		d.log.Debug("call failed: invalid parameters", append(attrs, "error", msg)...)
		msg = invalidParams + clip.String(c.Method, 64) + " (the values are logged at debug only)"
	}
	d.log.Info("call failed", append(attrs, "error", msg)...)
}
