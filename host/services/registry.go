package services

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agenthost/agenthost/internal/clip"
	"github.com/agenthost/agenthost/internal/pace"
	"github.com/agenthost/agenthost/proto/voice"
)

// MinChangeInterval is the least time between two signals of Changes (and
// of each subscription); changes that come sooner are folded into one.
const MinChangeInterval = 250 * time.Millisecond

// RegistryOptions configures a Registry.
type RegistryOptions struct {
	// Prefixes maps a provider ID ("plugin:clock") or its name part after
	// the ':' ("clock") to a prefix for its service names ("clock_"). The
	// full ID wins when both are present.
	Prefixes map[string]string
	// Policy keeps services out of the set (see Policy).
	Policy Policy
	// Order ranks providers: each entry is a provider ID ("mcp:fs") or a
	// kind ending in ':' ("plugin:") that stands for every provider of that
	// kind. See Registry for what the rank decides.
	Order []string
	// MaxDescription bounds a service's description: a longer one is cut
	// (services.max_description). MaxRegister bounds the register payload:
	// services that do not fit are left out, by rank then name (see
	// LeftOut). Zero takes DefaultMaxDescription, DefaultMaxRegister.
	MaxDescription, MaxRegister int
	// Log receives overrides (info) and clashes (error); the caller adds
	// its own attributes (component=…). Nil discards.
	Log *slog.Logger
	// MinChangeInterval paces the change signals (0: MinChangeInterval;
	// negative: none, every change is signalled at once, for tests of what
	// counts as a change).
	MinChangeInterval time.Duration
}

// Entry is one registered service: its name as the server sees it (prefix
// included), the provider's service (Service.Name unprefixed, Parameters
// compacted and defaulted to {"type":"object"}), the provider that runs it
// and its compiled schema.
type Entry struct {
	Name     string
	Service  Service
	Provider Provider
	Schema   *jsonschema.Schema
	valid    *validated // the params that passed last (validcache.go)
}

// Registry merges providers into one set of services. It is safe for
// concurrent use; lookups read an immutable snapshot and never wait for Put.
//
// Names have owners, by a stated rule and never by who answered first. Each
// provider has a rank: its place in Order (an exact ID before its kind),
// providers not in Order after all that are, ties by ID. When two ordinary
// providers offer the same name, the one ranked first owns it and the clash
// is reported (log and Conflicts) with the fix, a prefix for the other. A
// fallback provider (see FallbackProvider) yields a name to any ordinary
// provider and gets it back when that provider leaves. A provider that is
// restarting (Hold) keeps its names: they leave the set until it is back,
// and no other provider takes them meanwhile. A reserving provider (see
// ReservingProvider) owns its names outright: no other provider has them,
// whatever the rank or order, and offering one is a clash.
//
// The published set is bounded (see bounds.go): descriptions are cut to
// MaxDescription, and the services that would take the register past
// MaxRegister are left out, the lowest-ranked first.
type Registry struct {
	prefixes map[string]string
	policy   Policy
	log      *slog.Logger
	changes  chan struct{}
	pace     *pace.Pacer // of signal

	subMu sync.Mutex
	subs  map[*chan struct{}]struct{} // Subscribe's channels

	mu      sync.Mutex // serialises Put and Remove
	order   []string
	bounds  bounds
	members map[string]*member
	// reserved maps a folded name (see fold) to the reserving provider that
	// alone may have it (see ReservingProvider); it only grows.
	reserved map[string]string

	snap atomic.Pointer[snapshot]
}

// member is one provider as the registry holds it.
type member struct {
	p        Provider
	rank     int
	fallback bool
	held     bool      // restarting: its names are kept, out of the set
	offered  []Service // as p listed them at Put (Reconfigure compiles them again)
	services []Entry
	// heldOut says why the provider's services do not fit the current
	// configuration (a prefix that makes a name too long); they are out of
	// the set until a Reconfigure under which they fit. "" when they are in.
	heldOut string
	cuts    []string // descriptions cut to the bound
}

// snapshot is one immutable merged set.
type snapshot struct {
	byName    map[string]Entry
	sorted    []Entry
	names     []string
	reg       voice.Register
	canonical []byte
	conflicts []string
	overrides []string
	refused   map[string]string // name -> the setting that keeps it out
	heldOut   map[string]string // provider ID -> why its services are out
	held      map[string]string // name -> the restarting provider that keeps it
	cuts      []string
	leftOut   []string          // in rank order
	leftWhy   map[string]string // name -> why it is not in the register
}

// NewRegistry returns an empty registry.
func NewRegistry(opts RegistryOptions) *Registry {
	r := &Registry{
		prefixes: make(map[string]string, len(opts.Prefixes)),
		order:    append([]string(nil), opts.Order...),
		bounds:   newBounds(opts.MaxDescription, opts.MaxRegister),
		log:      opts.Log,
		policy:   opts.Policy,
		changes:  make(chan struct{}, 1),
		members:  make(map[string]*member),
		reserved: make(map[string]string),
	}
	if opts.MinChangeInterval == 0 {
		opts.MinChangeInterval = MinChangeInterval
	}
	r.pace = pace.New(max(opts.MinChangeInterval, 0), r.signal)
	for k, v := range opts.Prefixes {
		r.prefixes[k] = v
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	empty, _ := r.build(nil)
	r.snap.Store(empty)
	return r
}

// prefixFor returns the configured prefix for a provider ID.
func (r *Registry) prefixFor(id string) string { return PrefixOf(r.prefixes, id) }

// PrefixOf returns the prefix that prefixes (RegistryOptions.Prefixes) give
// the provider id: its full ID's entry, else its name part's, else "".
func PrefixOf(prefixes map[string]string, id string) string {
	if p, ok := prefixes[id]; ok {
		return p
	}
	return prefixes[namePart(id)]
}

// namePart is the part of a provider ID after the first ':' ("clock" for
// "plugin:clock"), or the whole ID.
func namePart(id string) string {
	if _, after, ok := strings.Cut(id, ":"); ok && after != "" {
		return after
	}
	return id
}

// Put adds p, or replaces the provider with the same ID in one step (hot
// reload swaps this way). Every service's name is checked and its schema
// compiled first; any problem refuses the whole provider with an error naming
// the provider, the service and the problem, and leaves the registry as it was.
func (r *Registry) Put(p Provider) error {
	if p == nil {
		return errors.New("services: Put of a nil provider")
	}
	id := p.ID()
	if id == "" {
		return errors.New("services: provider has an empty ID")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	offered := p.Services()
	entries, cuts, err := r.entriesOf(id, offered)
	if err != nil {
		return err
	}
	r.reserveLocked(id, offered, p)
	r.members[id] = &member{p: p, rank: r.rank(id), fallback: isFallback(p), offered: offered, services: entries, cuts: cuts}
	r.publish()
	return nil
}

// Reconfigure applies new prefixes and a new policy to every provider (a
// configuration reload), those held out included. A provider whose names no
// longer fit (a prefix that makes a name too long) is held out of the set,
// with an error in the log, and comes back, in its old place, with the
// first Reconfigure under which they fit again.
func (r *Registry) Reconfigure(prefixes map[string]string, policy Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prefixes = make(map[string]string, len(prefixes))
	for k, v := range prefixes {
		r.prefixes[k] = v
	}
	r.policy = policy
	for id, m := range r.members {
		r.reserveLocked(id, m.offered, m.p)
		entries, cuts, err := r.entriesOf(id, m.offered)
		if err != nil {
			if m.heldOut != err.Error() {
				r.log.Error("a provider's services do not fit the new configuration; they are out of the set until they fit (change services.prefixes and reload)",
					"provider", id, "err", err)
			}
			m.services, m.heldOut = nil, err.Error()
			continue
		}
		if m.heldOut != "" {
			r.log.Info("a provider's services fit the configuration again; they are back in the set", "provider", id)
		}
		m.services, m.cuts, m.heldOut = entries, cuts, ""
	}
	r.publish()
}

// HeldOut says why the provider with this ID has its services out of the
// set (they do not fit the configuration: see Reconfigure); "" when they
// are in, or the provider is unknown.
func (r *Registry) HeldOut(id string) string {
	return r.snap.Load().heldOut[id]
}

// entriesOf checks and compiles the services of provider id under its
// prefix, sorted by name, with their descriptions cut to the bound (cuts
// says which); r.mu held. The entries' Provider is set by build.
func (r *Registry) entriesOf(id string, svcs []Service) ([]Entry, []string, error) {
	prefix := r.prefixFor(id)
	entries := make([]Entry, 0, len(svcs))
	var cuts []string
	seen := make(map[string]bool, len(svcs))
	for _, s := range svcs {
		if err := checkName(s.Name); err != nil {
			return nil, nil, fmt.Errorf("provider %s: service %s: %v", id, quoteShort(s.Name), err)
		}
		name := prefix + s.Name
		if err := checkName(name); err != nil {
			return nil, nil, fmt.Errorf("provider %s: service %q with prefix %q: %v", id, s.Name, prefix, err)
		}
		if seen[s.Name] {
			return nil, nil, fmt.Errorf("provider %s: service %q: offered twice", id, s.Name)
		}
		seen[s.Name] = true
		params, sch, err := compileParameters(s.Parameters)
		if err != nil {
			return nil, nil, fmt.Errorf("provider %s: service %q: %v", id, s.Name, err)
		}
		s.Parameters = params
		if cut := r.bounds.cut(id, &s); cut != "" {
			cuts = append(cuts, cut)
		}
		entries = append(entries, Entry{Name: name, Service: s, Schema: sch, valid: &validated{}})
	}
	byName(entries)
	return entries, cuts, nil
}

// Remove drops the provider with the given ID; an unknown ID does nothing.
func (r *Registry) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[id]; !ok {
		return
	}
	delete(r.members, id)
	r.publish()
}

// RemoveProvider removes p's services, unless another provider has since
// taken its ID (a successor put while p was stopping keeps its services).
func (r *Registry) RemoveProvider(p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.members[p.ID()]; !ok || m.p != p {
		return
	}
	delete(r.members, p.ID())
	r.publish()
}

// publish rebuilds the merged set, logs what is new, stores it and signals
// Changes when its canonical JSON differs. Called with r.mu held.
func (r *Registry) publish() {
	members := make([]*member, 0, len(r.members))
	for _, m := range r.members {
		members = append(members, m)
	}
	sort.Slice(members, func(i, j int) bool {
		a, b := members[i], members[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.p.ID() < b.p.ID()
	})
	next, err := r.build(members)
	prev := r.snap.Load()
	if err != nil {
		// Unreachable in practice (every part was validated); keep serving the
		// previous set rather than publish one that cannot be sent.
		r.log.Error("cannot encode the service set; keeping the previous one", "err", err)
		return
	}
	for _, msg := range added(prev.overrides, next.overrides) {
		r.log.Info(msg)
	}
	for _, msg := range added(next.overrides, prev.overrides) {
		r.log.Info("no longer: " + msg)
	}
	for _, msg := range added(prev.conflicts, next.conflicts) {
		r.log.Error(msg)
	}
	for _, msg := range added(next.conflicts, prev.conflicts) {
		r.log.Info("conflict resolved: " + msg)
	}
	for _, msg := range added(prev.cuts, next.cuts) {
		r.log.Warn(msg)
	}
	if out := newKeys(prev.leftWhy, next.leftWhy); len(out) > 0 {
		r.log.Error("services left out of the register: it would pass services.max_register", "limit", SizeText(r.bounds.register),
			"count", len(out), "services", clip.String(strings.Join(out, ","), 4000), "rule", "kept in rank order (built-ins, plugins, MCP servers as configured), each provider's by name; see agenthost status")
	}
	if back := newKeys(next.leftWhy, prev.leftWhy); len(back) > 0 {
		r.log.Info("services back in the register", "count", len(back), "services", clip.String(strings.Join(back, ","), 4000))
	}
	r.snap.Store(next)
	if !bytes.Equal(prev.canonical, next.canonical) {
		r.pace.Signal() // then signal, at most once per MinChangeInterval
	}
}

// signal tells Changes and every subscriber, without blocking.
func (r *Registry) signal() {
	select {
	case r.changes <- struct{}{}:
	default:
	}
	r.notify()
}

// build merges members, in rank order, into a snapshot.
func (r *Registry) build(members []*member) (*snapshot, error) {
	s := &snapshot{byName: make(map[string]Entry), refused: make(map[string]string), held: make(map[string]string), heldOut: make(map[string]string)}
	owner := make(map[string]*member)
	for _, m := range members {
		if m.heldOut != "" {
			s.heldOut[m.p.ID()] = m.heldOut
		}
		s.cuts = append(s.cuts, m.cuts...)
		for _, e := range m.services {
			e.Provider = m.p
			if why := r.policy.refuses(e.Name); why != "" {
				s.refused[e.Name] = why
				continue
			}
			if keeper, ok := r.reserved[fold(e.Name)]; ok && keeper != m.p.ID() {
				s.conflicts = append(s.conflicts, r.reservedMessage(e.Name, keeper, m.p.ID(), e.Service.Name))
				continue
			}
			cur, taken := owner[e.Name]
			switch {
			case !taken:
			case cur.fallback && !m.fallback:
				s.overrides = append(s.overrides, overrideMessage(m.p.ID(), cur.p.ID(), e.Name))
			case !cur.fallback && m.fallback:
				s.overrides = append(s.overrides, overrideMessage(cur.p.ID(), m.p.ID(), e.Name))
				continue
			default:
				s.conflicts = append(s.conflicts, r.conflictMessage(e.Name, cur.p.ID(), m.p.ID(), e.Service.Name))
				continue
			}
			owner[e.Name] = m
			if m.held {
				delete(s.byName, e.Name)
				s.held[e.Name] = m.p.ID()
				continue
			}
			delete(s.held, e.Name)
			s.byName[e.Name] = e
		}
	}
	// What fits the register: the owned services in rank order, each
	// provider's by name (entriesOf sorted them).
	var cands []Entry
	for _, m := range members {
		for _, e := range m.services {
			if owned, ok := s.byName[e.Name]; ok && owned.Provider.ID() == m.p.ID() {
				cands = append(cands, owned)
			}
		}
	}
	kept, leftOut, why := r.bounds.fit(cands)
	s.leftOut, s.leftWhy = leftOut, why
	if len(leftOut) > 0 {
		s.byName = make(map[string]Entry, len(kept))
		for _, e := range kept {
			s.byName[e.Name] = e
		}
	}
	s.reg = voice.Register{Services: make(map[string]voice.ServiceDef, len(s.byName))}
	for name, e := range s.byName {
		s.names = append(s.names, name)
		s.reg.Services[name] = voice.ServiceDef{Description: e.Service.Description, Parameters: e.Service.Parameters}
	}
	sort.Strings(s.names)
	s.sorted = make([]Entry, len(s.names))
	for i, n := range s.names {
		s.sorted[i] = s.byName[n]
	}
	sort.Strings(s.overrides)
	canonical, err := voice.MarshalMCP(voice.MCPRegister, s.reg)
	if err != nil {
		return nil, err
	}
	s.canonical = canonical
	return s, nil
}

// overrideMessage says which provider took a name from a fallback provider.
func overrideMessage(winner, fallback, name string) string {
	if fallback == "builtin" {
		return fmt.Sprintf("%s overrides built-in %s", winner, name)
	}
	return fmt.Sprintf("%s overrides fallback %s's %s", winner, fallback, name)
}

// conflictMessage names both providers and the fix.
func (r *Registry) conflictMessage(name, keeper, loser, svc string) string {
	key := namePart(loser)
	if p := r.prefixFor(loser); p != "" {
		return fmt.Sprintf("service %q is offered by both %s and %s; %s keeps it and %s's is not registered "+
			"(its prefix %q still clashes: choose another services.prefixes.%s in the config)",
			name, keeper, loser, keeper, loser, p, key)
	}
	return fmt.Sprintf("service %q is offered by both %s and %s; %s keeps it and %s's is not registered "+
		"(set services.prefixes.%s: %q in the config to register it as %q)",
		name, keeper, loser, keeper, loser, key, key+"_", key+"_"+svc)
}

// newKeys lists, sorted, the keys of next that prev lacks.
func newKeys(prev, next map[string]string) []string {
	var out []string
	for k := range next {
		if _, ok := prev[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// added returns the messages in next that are not in prev.
func added(prev, next []string) []string {
	var out []string
	for _, m := range next {
		found := false
		for _, p := range prev {
			if p == m {
				found = true
				break
			}
		}
		if !found {
			out = append(out, m)
		}
	}
	return out
}

// Register returns the merged set as the register message carries it. The
// map is the caller's; the raw schemas are shared and must not be modified.
func (r *Registry) Register() voice.Register {
	s := r.snap.Load()
	out := voice.Register{Services: make(map[string]voice.ServiceDef, len(s.reg.Services))}
	for k, v := range s.reg.Services {
		out.Services[k] = v
	}
	return out
}

// Canonical returns the marshalled register payload of the current set:
// voice.MarshalMCP(voice.MCPRegister, r.Register()) with compacted schemas,
// the bytes Changes compares. The slice is the caller's.
func (r *Registry) Canonical() []byte {
	return bytes.Clone(r.snap.Load().canonical)
}

// Changes returns a channel with a buffer of one that receives a signal
// whenever the merged set's canonical JSON changes. Signals coalesce: a
// receiver that was away finds one signal and reads the current set with
// Register. A Put or Remove that leaves the set identical signals nothing.
// Signals come at most once per MinChangeInterval: changes that follow one
// sooner are signalled together when it has run out, so the last is never
// missed (a provider whose set flaps cannot turn into a flood of registers).
func (r *Registry) Changes() <-chan struct{} {
	return r.changes
}

// Sent says that the whole set has just been sent by other means (the
// register of a new connection): the changes held back are signalled now
// (to subscribers as well), and the next change at once.
func (r *Registry) Sent() { r.pace.Flush() }

// Subscribe returns a channel of its own, like Changes (a buffer of one;
// signals coalesce; only a change of the canonical set signals), for a
// second reader of changes such as the MCP server: Changes has one reader,
// the link. cancel ends the subscription; the channel is never closed.
func (r *Registry) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.subMu.Lock()
	if r.subs == nil {
		r.subs = make(map[*chan struct{}]struct{})
	}
	r.subs[&ch] = struct{}{}
	r.subMu.Unlock()
	return ch, func() {
		r.subMu.Lock()
		delete(r.subs, &ch)
		r.subMu.Unlock()
	}
}

// notify signals every subscriber without blocking.
func (r *Registry) notify() {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	for ch := range r.subs {
		select {
		case *ch <- struct{}{}:
		default:
		}
	}
}

// Lookup finds a service by its registered name (prefix included).
func (r *Registry) Lookup(name string) (Entry, bool) {
	e, ok := r.snap.Load().byName[name]
	return e, ok
}

// Entries lists the registered services sorted by name.
func (r *Registry) Entries() []Entry {
	return append([]Entry(nil), r.snap.Load().sorted...)
}

// Refused says which setting (services.allow or services.deny) keeps a
// provider's service with this name out of the set; "" when none does.
func (r *Registry) Refused(name string) string {
	return r.snap.Load().refused[name]
}

// Names lists the registered service names, sorted.
func (r *Registry) Names() []string {
	return append([]string(nil), r.snap.Load().names...)
}

// Conflicts returns the current clash messages, in rank order of the
// providers that lost; empty when there are none.
func (r *Registry) Conflicts() []string {
	return append([]string(nil), r.snap.Load().conflicts...)
}
