package talk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/host/household"
	"github.com/agenthost/agenthost/host/speaker"
)

// member is this speaker in its household: the membership, while it runs,
// and the microphone's meter that its claims are measured with.
type member struct {
	o     household.Options
	log   *slog.Logger
	meter *household.Meter
	conv  *conversation.Conversation // set once the conversation is built
	sp    *speaker.Speaker
	play  PlayFunc // set by the host before the household starts
	// ringsEverywhere: this speaker's timers ring on every member.
	ringsEverywhere bool
	h               atomic.Pointer[household.Household]
}

// newMember is the speaker's household of cfg: nil when it has no key (or
// one it may not use, which the log says).
func newMember(cfg *config.Config, log *slog.Logger, sp *speaker.Speaker) *member {
	key, ok, err := household.LoadKey(cfg.Plugins.StateDirectory())
	if err != nil {
		log.Error("the household's key cannot be used; this speaker answers alone", "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	hc := cfg.Household
	m := &member{log: log, meter: household.NewMeter(cfg.Audio.Rate), sp: sp, ringsEverywhere: hc.Rings == "everywhere"}
	m.o = household.Options{Key: key, Name: hc.Name, Room: hc.Room, Priority: hc.Priority, Peers: hc.Peers,
		Discover: hc.Discover, Window: hc.Window.D(), Advertise: hc.Advertise, Log: log, Hear: m.hear, Settled: m.settled, OnMessage: m.message}
	if m.o.Name == "" {
		m.o.Name, _ = os.Hostname()
	}
	host, port, _ := net.SplitHostPort(hc.Listen)
	m.o.Bind = host
	m.o.Port, _ = strconv.Atoi(port)
	return m
}

func (m *member) Name() string { return "household" }

// Run joins the household until ctx ends. A speaker that cannot listen
// answers alone, and says why.
func (m *member) Run(ctx context.Context, ready func()) error {
	h, err := household.Start(m.o)
	ready()
	if err != nil {
		m.log.Error("this speaker cannot join its household; it answers alone (is household.listen's port taken?)", "err", err)
		return nil
	}
	m.log.Info("household joined", "speaker", m.o.Name, "room", m.o.Room, "household", m.o.Key.ID(), "address", h.Addr())
	m.h.Store(h)
	m.sp.ShareStops(func() {
		if h := m.h.Load(); h != nil {
			h.Send(stopRing, ringStop{By: m.o.Name})
		}
	})
	if m.ringsEverywhere {
		m.sp.Device().OnRing(func(e timers.Entry) {
			if h := m.h.Load(); h != nil {
				h.Send(ringAll, ringing{By: m.o.Name, ID: e.ID, Kind: string(e.Kind), Label: e.Label, Seconds: e.Seconds, At: e.At})
			}
		})
	}
	<-ctx.Done()
	m.h.Store(nil)
	return h.Close()
}

// Status is the household's, nil when there is none.
func (m *member) Status() *household.Status {
	if m == nil {
		return nil
	}
	h := m.h.Load()
	if h == nil {
		return &household.Status{ID: m.o.Key.ID(), Name: m.o.Name, Room: m.o.Room}
	}
	s := h.Status()
	return &s
}

// wake takes a detection of this speaker's detector: at once when the
// speaker is alone, else when the household has settled that this
// speaker answers.
func (m *member) wake(d wakeword.Detection) {
	h := m.h.Load()
	if h == nil || !m.conv.WakeWouldStart() {
		m.conv.Wake(conversation.Detection{Model: d.Model, Score: d.Score, End: d.End})
		return
	}
	level, snr := m.meter.Measure(d.End)
	c := household.Claim{Model: d.Model, Score: d.Score, Level: level, SNR: snr, End: d.End, Age: m.meter.Age(d.End)}
	go func() {
		dec := h.Decide(c)
		switch {
		case dec.Repeat: // measured on another's claim already: settled there
			m.log.Debug("wake word heard; the household settled this phrase already")
		case dec.Win:
			m.log.Debug("wake word heard; this speaker answers", "why", dec.Why, "waited_ms", dec.Waited.Milliseconds(), "level_dbfs", level)
			m.conv.Wake(conversation.Detection{Model: d.Model, Score: d.Score, End: d.End})
		default:
			m.standDown(dec)
		}
	}()
}

func (m *member) standDown(dec household.Decision) {
	m.log.Info("wake word heard; another speaker of the household answers", "answers", dec.Winner, "why", dec.Why, "waited_ms", dec.Waited.Milliseconds())
}

// hear measures this speaker's microphone over a phrase another speaker
// claims (it ended age ago). A speaker that could not answer says so.
func (m *member) hear(age time.Duration) household.Claim {
	if !m.conv.WakeWouldStart() {
		return household.Claim{Busy: true}
	}
	end := m.meter.Ago(age)
	level, snr := m.meter.Measure(end)
	return household.Claim{Level: level, SNR: snr, End: end}
}

// settled takes the decision on a phrase this speaker measured on
// another's claim: it answers if it heard it best, else it says who does.
func (m *member) settled(c household.Claim, dec household.Decision) {
	if c.Busy {
		return // in a turn, or muted: it only said so
	}
	if !dec.Win {
		m.standDown(dec)
		return
	}
	m.log.Info("wake word heard by the household; this speaker heard it best and answers", "why", dec.Why, "waited_ms", dec.Waited.Milliseconds())
	m.conv.Wake(conversation.Detection{Model: c.Model, Score: c.Score, End: c.End})
}

// stopRing is the message of an owner's stop: every speaker's ring stops.
const stopRing = "stop-ring"

type ringStop struct {
	By string `json:"by"`
}

// ringAll is the message of a timer or alarm that rings on every speaker
// (household.rings: everywhere on the speaker it was set on).
const ringAll = "ring"

type ringing struct {
	By      string `json:"by"`
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Label   string `json:"label,omitempty"`
	Seconds int64  `json:"seconds,omitempty"`
	At      string `json:"at,omitempty"`
}

// message takes one of the household's own messages from another member.
func (m *member) message(kind string, body json.RawMessage) {
	switch kind {
	case playAll:
		m.played(body)
	case stopRing:
		var r ringStop
		if json.Unmarshal(body, &r) != nil {
			return
		}
		if was := m.sp.StopRingingHere(fmt.Sprintf("the owner, at %.40q of the household", r.By)); len(was) > 0 {
			m.log.Info("the ringing stopped by a stop on another speaker of the household", "speaker", r.By)
		}
	case ringAll:
		var r ringing
		if json.Unmarshal(body, &r) != nil || (r.Kind != string(timers.Timer) && r.Kind != string(timers.Alarm)) {
			return
		}
		// A peer's ring is bounded as this speaker's own: by its timeout,
		// and by any stop.
		m.sp.Device().RingFor(fmt.Sprintf("%.40s", r.By), timers.Entry{ID: fmt.Sprintf("%.40s", r.ID), Kind: timers.Kind(r.Kind),
			Label: fmt.Sprintf("%.100s", r.Label), Seconds: r.Seconds, At: fmt.Sprintf("%.10s", r.At), Due: time.Now()})
	}
}
