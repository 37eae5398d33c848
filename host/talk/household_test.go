package talk

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/household"
)

// TestGetHouseholdTellsTheModelTheSpeakersAndTheirRooms: the household's
// service lists the members (this one among them, once the household
// runs) with their rooms, and which speaker the user talks to.
func TestGetHouseholdTellsTheModelTheSpeakersAndTheirRooms(t *testing.T) {
	key, _ := household.NewKey()
	m := &member{log: slog.New(slog.DiscardHandler), o: household.Options{Key: key, Name: "kitchen-pi", Room: "kitchen", Bind: "127.0.0.1", Window: 150 * time.Millisecond}}
	p := householdServices{m}
	call := func() string {
		b, err := p.Call(context.Background(), getHousehold, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := call(), `{"this_speaker":"kitchen-pi","room":"kitchen","speakers":[]}`; got != want {
		t.Errorf("before the household runs: %s, want %s", got, want)
	}
	h, err := household.Start(m.o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	m.h.Store(h)
	var out struct {
		Speakers []struct{ Name, Room string } `json:"speakers"`
	}
	if err := json.Unmarshal([]byte(call()), &out); err != nil || len(out.Speakers) != 1 || out.Speakers[0].Name != "kitchen-pi" || out.Speakers[0].Room != "kitchen" {
		t.Errorf("a household of one: %s (%v)", call(), err)
	}
}
