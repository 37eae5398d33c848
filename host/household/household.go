// Package household lets the speakers of one household act as one: they
// find each other (mDNS and the addresses the owner gives), keep a
// membership on hashicorp/memberlist (SWIM gossip, every packet sealed with
// the household's key), and settle which of them answers a wake phrase
// they all heard (Arbiter).
package household

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Options are a speaker's part in its household.
type Options struct {
	Key      Key
	Name     string // unique in the household
	Room     string
	Priority int
	// Bind is the address the gossip listens on (UDP and TCP); Port 0
	// picks one. Advertise is the address the others reach it at ("":
	// memberlist's pick of Bind's).
	Bind      string
	Port      int
	Advertise string
	// Peers are addresses (host or host:port) of other speakers to join,
	// besides what discovery finds.
	Peers []string
	// Discover finds other speakers of the household on the LAN (mDNS).
	Discover bool
	Window   time.Duration
	Measure  Measure
	Log      *slog.Logger
	// Hear and Settled: see Arbiter.
	Hear    func(age time.Duration) Claim
	Settled func(Claim, Decision)
	// OnMessage takes the household's own messages (an announcement, a
	// ring stopped) from another member.
	OnMessage func(kind string, body json.RawMessage)
}

// DefaultPort is the household's gossip port (memberlist's own).
const DefaultPort = 7946

// Household is this speaker's membership.
type Household struct {
	o   Options
	log *slog.Logger
	ml  *memberlist.Memberlist
	arb *Arbiter
	mu  sync.Mutex
	// known are addresses of members once seen: rejoined when they are gone.
	known map[string]bool
	stop  chan struct{}
	done  sync.WaitGroup
	disc  io.Closer
}

type meta struct {
	Room     string `json:"r"`
	Priority int    `json:"p"`
}

// Start joins the household: it listens, joins the peers it knows and
// keeps looking for the others.
func Start(o Options) (*Household, error) {
	if o.Name == "" {
		return nil, errors.New("household: a speaker needs a name")
	}
	if o.Measure == "" {
		o.Measure = Measures[0]
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	h := &Household{o: o, log: o.Log, known: map[string]bool{}, stop: make(chan struct{})}
	cfg := memberlist.DefaultLANConfig()
	cfg.Name = o.Name
	cfg.BindAddr = o.Bind
	if cfg.BindAddr == "" {
		cfg.BindAddr = "0.0.0.0"
	}
	cfg.BindPort, cfg.AdvertisePort = o.Port, o.Port
	cfg.AdvertiseAddr = o.Advertise
	cfg.Label = "agenthost-household"
	kr, err := memberlist.NewKeyring(nil, o.Key[:])
	if err != nil {
		return nil, err
	}
	cfg.Keyring = kr
	cfg.GossipVerifyIncoming, cfg.GossipVerifyOutgoing = true, true
	cfg.Delegate = (*delegate)(h)
	cfg.Events = (*events)(h)
	// memberlist's own lines (a stranger's undecryptable packets among
	// them) at debug: nothing an outsider sends grows the log at info.
	cfg.Logger = log.New(&debugWriter{h.log}, "", 0)
	h.arb = NewArbiter(o.Name, o.Window, o.Measure, h.others, h.sendAll)
	if o.Hear != nil {
		h.arb.Hear = func(age time.Duration) Claim { return h.stamp(o.Hear(age)) }
	}
	h.arb.Settled = o.Settled
	if h.ml, err = memberlist.Create(cfg); err != nil {
		return nil, fmt.Errorf("household: listen on %s:%d: %w", cfg.BindAddr, o.Port, err)
	}
	for _, p := range o.Peers {
		h.known[withPort(p)] = true
	}
	if o.Discover {
		if h.disc, err = advertise(h); err != nil {
			h.log.Warn("household: no discovery on the LAN (give household.peers instead)", "err", err)
		}
	}
	h.done.Add(1)
	go h.rejoin()
	return h, nil
}

// rejoin joins every known address that is not a member now, at once and
// then every few seconds: a speaker that restarted or was cut off comes
// back, and one that starts first finds the rest when they come.
func (h *Household) rejoin() {
	defer h.done.Done()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		h.joinMissing()
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
	}
}

func (h *Household) joinMissing() {
	if h.o.Discover {
		for _, a := range discover(h.o.Key.ID(), time.Second) {
			h.addKnown(a)
		}
	}
	alive := map[string]bool{}
	for _, n := range h.ml.Members() {
		alive[n.Address()] = true
	}
	self := h.ml.LocalNode().Address()
	h.mu.Lock()
	var missing []string
	for a := range h.known {
		if !alive[a] && a != self {
			missing = append(missing, a)
		}
	}
	h.mu.Unlock()
	if len(missing) == 0 {
		return
	}
	if n, err := h.ml.Join(missing); err != nil && n == 0 {
		h.log.Debug("household: no speaker answered", "tried", strings.Join(missing, " "), "err", err)
	}
}

func (h *Household) addKnown(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.known) < 256 { // bounded: what a LAN announces cannot grow it
		h.known[addr] = true
	}
}

// Addr is the address the household reaches this speaker at.
func (h *Household) Addr() string { return h.ml.LocalNode().Address() }

// others is how many other members are alive.
func (h *Household) others() int { return max(h.ml.NumMembers()-1, 0) }

// sendAll sends b to every other member, best effort (UDP, sealed).
func (h *Household) sendAll(b []byte) {
	for _, n := range h.ml.Members() {
		if n.Name == h.o.Name {
			continue
		}
		if err := h.ml.SendBestEffort(n, b); err != nil {
			h.log.Debug("household: send", "to", n.Name, "err", err)
		}
	}
}

// sendTo sends b to the speaker at addr, member or not (sealed with this
// speaker's key: one of another household cannot read it).
func (h *Household) sendTo(addr string, b []byte) error {
	return h.ml.SendToAddress(memberlist.Address{Addr: addr}, b)
}

// Decide settles who answers the wake phrase this speaker just heard.
func (h *Household) Decide(c Claim) Decision {
	return h.arb.Decide(h.stamp(c))
}

func (h *Household) stamp(c Claim) Claim {
	c.Room, c.Priority = h.o.Room, h.o.Priority
	return c
}

// Send tells every other member one of the household's own messages.
func (h *Household) Send(kind string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	h.sendAll(encodeEnvelope(kind, b))
	return nil
}

// Member is a speaker of the household.
type Member struct {
	Name     string `json:"name"`
	Room     string `json:"room,omitempty"`
	Address  string `json:"address"`
	Priority int    `json:"priority,omitempty"`
	Self     bool   `json:"self,omitempty"`
}

// Members are the members alive now, by name.
func (h *Household) Members() []Member {
	var out []Member
	for _, n := range h.ml.Members() {
		var m meta
		json.Unmarshal(n.Meta, &m)
		out = append(out, Member{Name: n.Name, Room: m.Room, Address: n.Address(), Priority: m.Priority, Self: n.Name == h.o.Name})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Status is the household as `agenthost status` shows it.
type Status struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Room    string   `json:"room"`
	Members []Member `json:"members"`
	Stats
}

// Status is the household now.
func (h *Household) Status() Status {
	return Status{ID: h.o.Key.ID(), Name: h.o.Name, Room: h.o.Room, Members: h.Members(), Stats: h.arb.Stats()}
}

// Close leaves the household (the others learn it at once) and stops.
func (h *Household) Close() error {
	close(h.stop)
	h.done.Wait()
	if h.disc != nil {
		h.disc.Close()
	}
	h.ml.Leave(time.Second)
	return h.ml.Shutdown()
}

func withPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(DefaultPort))
}

// The memberlist delegates.
type delegate Household

func (d *delegate) NodeMeta(limit int) []byte {
	b, _ := json.Marshal(meta{Room: d.o.Room, Priority: d.o.Priority})
	if len(b) > limit {
		return nil
	}
	return b
}

func (d *delegate) NotifyMsg(b []byte) {
	if len(b) > maxMsg {
		return
	}
	var e envelope
	if json.Unmarshal(b, &e) != nil {
		return
	}
	switch e.Kind {
	case "claim", "answer":
		d.arb.Receive(b)
	default:
		if d.o.OnMessage != nil && e.Body != nil {
			d.o.OnMessage(e.Kind, e.Body)
		}
	}
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

type events Household

func (e *events) NotifyJoin(n *memberlist.Node) {
	if n.Name == e.o.Name {
		return
	}
	(*Household)(e).addKnown(n.Address())
	e.log.Info("household: a speaker joined", "speaker", n.Name, "address", n.Address())
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	e.log.Info("household: a speaker left or is unreachable", "speaker", n.Name)
}

func (e *events) NotifyUpdate(n *memberlist.Node) {}

type envelope struct {
	Kind string          `json:"k"`
	Body json.RawMessage `json:"b,omitempty"`
}

func encodeEnvelope(kind string, body []byte) []byte {
	b, _ := json.Marshal(envelope{Kind: kind, Body: body})
	return b
}

// debugWriter puts memberlist's log lines into the log at debug.
type debugWriter struct{ log *slog.Logger }

func (w *debugWriter) Write(p []byte) (int, error) {
	w.log.Debug("household: " + strings.TrimSpace(string(p)))
	return len(p), nil
}
