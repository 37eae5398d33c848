package talk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// PlayFunc plays url (play_media's class: media or announcement) on this
// speaker, as caller.
type PlayFunc func(ctx context.Context, caller services.Caller, url, class string) voice.Outcome

// playLead is how long after an owner's play to a room every speaker
// starts it: time for the message to reach them all and for each to start
// its decoder, so that they start together. Each plays it at once, held
// in its mixer until then (mixer.StartAt).
const playLead = time.Second

// playAll is the message of a play to rooms.
const playAll = "play"

// RoomPlay is a play to a room ("" every room) of the household.
type RoomPlay struct {
	URL   string `json:"url"`
	Class string `json:"class"`
	Room  string `json:"room,omitempty"`
}

// RoomPlayed says where a RoomPlay went.
type RoomPlayed struct {
	Here    bool           `json:"here"`              // this speaker plays it
	Members int            `json:"members"`           // the other members told
	Here404 string         `json:"error,omitempty"`   // this speaker's play failed
	Outcome *voice.Outcome `json:"outcome,omitempty"` // this speaker's play
}

// SetPlay gives the household the speaker's own play (the dispatcher's
// play_media).
func (t *Talk) SetPlay(play PlayFunc) {
	if t != nil && t.home != nil {
		t.home.play = play
	}
}

// PlayInRooms plays p on every speaker of the household in p.Room (every
// room when it is ""), this one included, all starting playLead from now.
func (t *Talk) PlayInRooms(ctx context.Context, p RoomPlay) (RoomPlayed, error) {
	if t == nil || t.home == nil || t.home.play == nil {
		return RoomPlayed{}, errors.New("this speaker is in no household (agenthost household create or join); play it here without --room")
	}
	m := t.home
	h := m.h.Load()
	if h == nil {
		return RoomPlayed{}, errors.New("the household has not started; see the log")
	}
	var out RoomPlayed
	for _, mb := range h.Members() {
		if !mb.Self && (p.Room == "" || mb.Room == p.Room) {
			out.Members++
		}
	}
	at := time.Now().Add(playLead)
	if err := h.Send(playAll, p); err != nil {
		return out, err
	}
	if p.Room == "" || p.Room == m.o.Room {
		out.Here = true
		m.startAt(p.Class, at)
		o := m.play(ctx, services.CallerOwner, p.URL, p.Class)
		out.Outcome = &o
	}
	if !out.Here && out.Members == 0 {
		return out, fmt.Errorf("no speaker of the household is in room %q", p.Room)
	}
	return out, nil
}

// played takes a play to rooms from another speaker: one for this room
// starts playLead after it was sent, with the rights of a peer.
func (m *member) played(body json.RawMessage) {
	var p RoomPlay
	if json.Unmarshal(body, &p) != nil || m.play == nil || (p.Room != "" && p.Room != m.o.Room) {
		return
	}
	m.startAt(p.Class, time.Now().Add(playLead))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if o := m.play(ctx, services.CallerPeer, p.URL, p.Class); !o.Success {
			m.log.Warn("a play from another speaker of the household failed here", "class", p.Class, "err", o.Error)
		}
	}()
}

// startAt holds the next stream of class (play_media's: media, or
// announcement) on this speaker's output until at.
func (m *member) startAt(class string, at time.Time) {
	if class == "" {
		class = "media"
	}
	c, err := mixer.ParseClass(class)
	if out := m.sp.Output(); out != nil && err == nil {
		out.StartAt(c, at)
	}
}

// getHousehold is the service that tells the model the household: its
// speakers and their rooms, and which one this is.
const getHousehold = "get_household"

// householdServices is the household as a provider of services.
type householdServices struct{ m *member }

func (householdServices) ID() string { return "household" }

func (householdServices) Services() []services.Service {
	return []services.Service{{Name: getHousehold,
		Description: "Lists the speakers of this household (several speakers in one home that answer as one) and the room of each; says which one the user is talking to.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}}
}

func (p householdServices) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != getHousehold {
		return nil, fmt.Errorf("household: unknown service %q", method)
	}
	s := p.m.Status()
	type speaker struct {
		Name string `json:"name"`
		Room string `json:"room,omitempty"`
	}
	out := struct {
		This     string    `json:"this_speaker"`
		Room     string    `json:"room,omitempty"`
		Speakers []speaker `json:"speakers"`
	}{This: s.Name, Room: s.Room, Speakers: []speaker{}}
	for _, mb := range s.Members {
		out.Speakers = append(out.Speakers, speaker{mb.Name, mb.Room})
	}
	return json.Marshal(out)
}

// HouseholdServices are the household's services, nil when the speaker is
// in none.
func (t *Talk) HouseholdServices() services.Provider {
	if t == nil || t.home == nil {
		return nil
	}
	return householdServices{t.home}
}
