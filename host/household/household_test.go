package household

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// start starts a speaker of the household of key on loopback, joining
// peers. Its window is long: when every member claims, none waits for it,
// and a busy machine that delays a claim by more than 150 ms cannot make
// two answer.
func start(t *testing.T, key Key, name string, peers ...string) *Household {
	t.Helper()
	h, err := Start(Options{Key: key, Name: name, Room: "room-" + name, Bind: "127.0.0.1", Window: time.Minute, Peers: peers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// eventually waits (up to a minute of real time: a wait, not a measure)
// for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: not %s", what)
		}
	}
}

// trio starts speakers a, b (joining a) and c (joining b) and waits until
// each sees all three.
func trio(t *testing.T, key Key) (a, b, c *Household) {
	t.Helper()
	a = start(t, key, "a")
	b = start(t, key, "b", a.Addr())
	c = start(t, key, "c", b.Addr())
	for _, h := range []*Household{a, b, c} {
		eventually(t, h.o.Name+" sees three members", func() bool { return len(h.Members()) == 3 })
	}
	return a, b, c
}

func names(h *Household) string {
	s := ""
	for _, m := range h.Members() {
		s += m.Name + "@" + m.Room + " "
	}
	return s
}

// TestSpeakersWithTheKeyFormAHouseholdAndStrangersStayOut: three speakers
// with the key join through the first; one with another key (a stranger,
// or a speaker with the household's old key) that knows their address
// neither joins nor is heard when it claims a turn.
func TestSpeakersWithTheKeyFormAHouseholdAndStrangersStayOut(t *testing.T) {
	key, _ := NewKey()
	a, b, _ := trio(t, key)
	if got := names(a); got != "a@room-a b@room-b c@room-c " {
		t.Errorf("members: %s", got)
	}
	other, _ := NewKey()
	stranger := start(t, other, "stranger", a.Addr(), b.Addr())
	stranger.joinMissing() // once more, after the household is up
	for _, d := range []time.Duration{0, time.Second} {
		time.Sleep(d)
		if n := len(a.Members()); n != 3 || len(stranger.Members()) != 1 {
			t.Fatalf("with a stranger knocking: a sees %s, the stranger %s", names(a), names(stranger))
		}
	}
	// The stranger claims every turn; the household does not hear it.
	stranger.Decide(Claim{Score: 1, Level: -10, Priority: 99})
	time.Sleep(200 * time.Millisecond)
	a.arb.mu.Lock()
	for _, h := range a.arb.heard {
		if h.claim.Speaker == "stranger" {
			t.Errorf("a heard the stranger's claim: %+v", h.claim)
		}
	}
	a.arb.mu.Unlock()
}

// TestOneSpeakerAnswersOverTheRealGossip: the three claim the same
// utterance within 30 ms over memberlist's sealed UDP; one answers, the
// best, and all agree.
func TestOneSpeakerAnswersOverTheRealGossip(t *testing.T) {
	key, _ := NewKey()
	a, b, c := trio(t, key)
	type result struct {
		name string
		d    Decision
	}
	out := make(chan result, 3)
	for i, h := range []*Household{a, b, c} {
		go func() {
			time.Sleep(time.Duration(i) * 15 * time.Millisecond)
			out <- result{h.o.Name, h.Decide(Claim{Score: 0.9, Level: float32(-40 + 5*i%3)})}
		}()
	}
	wins := 0
	for range 3 {
		r := <-out
		if r.d.Win {
			wins++
		}
		if r.d.Winner != "b" {
			t.Errorf("%s: winner %s (%s); want b, which heard it best", r.name, r.d.Winner, r.d.Why)
		}
	}
	if wins != 1 {
		t.Errorf("%d answered, want one", wins)
	}
}

// TestAMessageReachesEveryMemberAndNoStranger: a stop (or an
// announcement) one speaker sends reaches every other member, and what a
// speaker with another key sends reaches none. It logs how long the
// message took.
func TestAMessageReachesEveryMemberAndNoStranger(t *testing.T) {
	key, _ := NewKey()
	got := make(chan string, 16)
	startWith := func(k Key, name string, peers ...string) *Household {
		h, err := Start(Options{Key: k, Name: name, Bind: "127.0.0.1", Window: 150 * time.Millisecond, Peers: peers,
			OnMessage: func(kind string, body json.RawMessage) { got <- name + " " + kind + " " + string(body) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	a := startWith(key, "a")
	b := startWith(key, "b", a.Addr())
	c := startWith(key, "c", a.Addr())
	for _, h := range []*Household{a, b, c} {
		eventually(t, h.o.Name+" sees three members", func() bool { return len(h.Members()) == 3 })
	}
	other, _ := NewKey()
	stranger := startWith(other, "stranger", a.Addr())
	stranger.sendTo(a.Addr(), encodeEnvelope("stop-ring", []byte(`{"by":"stranger"}`)))
	sent := time.Now()
	if err := b.Send("stop-ring", map[string]string{"by": "b"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{`a stop-ring {"by":"b"}`: true, `c stop-ring {"by":"b"}`: true}
	for len(want) > 0 {
		select {
		case m := <-got:
			if !want[m] {
				t.Fatalf("unexpected message %q", m)
			}
			delete(want, m)
		case <-time.After(time.Minute):
			t.Fatalf("after a minute, not received: %v", want)
		}
	}
	t.Logf("the stop reached both others in %s", time.Since(sent))
	select {
	case m := <-got:
		t.Errorf("a message more: %q", m)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestTheMembershipHealsWhenASpeakerComesBack: a speaker that died
// without a word (a power cut: no leave) is dropped by the others; the
// same speaker started again, knowing only one address, is a member of
// all of them again.
func TestTheMembershipHealsWhenASpeakerComesBack(t *testing.T) {
	key, _ := NewKey()
	a := start(t, key, "a")
	b := start(t, key, "b", a.Addr())
	c, err := Start(Options{Key: key, Name: "c", Bind: "127.0.0.1", Window: 150 * time.Millisecond, Peers: []string{a.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Household{a, b, c} {
		eventually(t, h.o.Name+" sees three members", func() bool { return len(h.Members()) == 3 })
	}
	close(c.stop)
	c.done.Wait()
	c.ml.Shutdown() // no leave: the others find out by probing
	eventually(t, "a and b drop c", func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 })
	c = start(t, key, "c", b.Addr())
	for _, h := range []*Household{a, b, c} {
		eventually(t, h.o.Name+" sees three members again", func() bool { return len(h.Members()) == 3 })
	}
}

// TestWhatTheLANAnnouncesIsBounded: addresses found by discovery (which
// anyone on the LAN can answer) are kept up to 256, no more.
func TestWhatTheLANAnnouncesIsBounded(t *testing.T) {
	h := &Household{known: map[string]bool{}}
	for i := range 1000 {
		h.addKnown(fmt.Sprintf("10.0.%d.%d:7946", i/256, i%256))
	}
	if len(h.known) != 256 {
		t.Errorf("%d addresses kept, want 256", len(h.known))
	}
}
