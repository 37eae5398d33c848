package household

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Claim is what a speaker heard when it detected the wake phrase: the
// household lets the best claim answer.
type Claim struct {
	Speaker  string  `json:"s"`
	Room     string  `json:"r,omitempty"`
	Score    float32 `json:"sc"`
	Level    float32 `json:"l"` // dBFS: the phrase's loudest half second
	SNR      float32 `json:"n"` // dB: Level over the noise floor before it
	Priority int     `json:"p"`
	// Age is how long ago the phrase ended, when the claim was sent: a
	// speaker that did not detect the phrase (yet) measures the same span
	// of its own microphone, without a shared clock.
	Age time.Duration `json:"a,omitempty"`
	// Busy: the speaker cannot answer (in a turn, muted); it only says so,
	// so that the others need not wait for it.
	Busy bool `json:"b,omitempty"`
	// Model is the wake model that heard it.
	Model string `json:"m,omitempty"`
	// End is where the phrase ended in this speaker's own stream (never
	// sent).
	End int64 `json:"-"`
}

// Measure is what ranks two claims of the same priority.
type Measure string

const (
	ByLevel Measure = "level" // the phrase's level
	BySNR   Measure = "snr"   // the phrase's level over the speaker's own noise floor
	ByScore Measure = "score" // the detector's score
)

// Measures are the measures, the default first: the level found the
// nearest speaker most often in the simulated homes tuned on (and held
// out: docs/household.md).
var Measures = []Measure{ByLevel, BySNR, ByScore}

func (m Measure) of(c Claim) float32 {
	switch m {
	case BySNR:
		return c.SNR
	case ByScore:
		return c.Score
	}
	return c.Level
}

// Better reports whether a wins over b: the higher priority, then the
// higher measure, then the higher score, then the lower name (every
// speaker ranks the same claims alike).
func (m Measure) Better(a, b Claim) bool {
	switch {
	case a.Busy != b.Busy:
		return b.Busy
	case a.Priority != b.Priority:
		return a.Priority > b.Priority
	case m.of(a) != m.of(b):
		return m.of(a) > m.of(b)
	case a.Score != b.Score:
		return a.Score > b.Score
	}
	return a.Speaker < b.Speaker
}

// Decision is how one detection was settled.
type Decision struct {
	Win    bool
	Winner string        // who answers
	Rivals int           // the other claims it was weighed against
	Waited time.Duration // from the detection to the decision
	Why    string
	Repeat bool // the phrase was claimed already: nothing to do
}

const (
	// matchSpan: claims and answers of phrases that ended this close are
	// of one utterance (each claim says how long ago its phrase ended, so
	// a detector that lags still finds the others' claims of it; a turn
	// lasts longer than this).
	matchSpan = 1500 * time.Millisecond
	// maxAge: a claim of a phrase older than this is not measured (the
	// meter keeps more, but the household has settled it long ago).
	maxAge   = 3 * time.Second
	maxHeard = 64   // claims kept: an outsider cannot grow it (and has no key)
	maxMsg   = 1024 // a larger message is not ours
)

type message struct {
	Kind  string `json:"k"` // claim, answer
	Claim Claim  `json:"c"`
}

type heard struct {
	at     time.Time // when it arrived
	end    time.Time // when its phrase ended (at less its age)
	answer bool
	claim  Claim
}

// Arbiter settles which speaker answers an utterance: each tells the
// others its claim and waits at most Window for theirs; the best answers
// and says so, the rest stand down. Alone it waits for no one.
type Arbiter struct {
	self    string
	window  time.Duration
	measure Measure
	peers   func() int   // the other members alive now
	send    func([]byte) // to every other member, best effort
	// Hear, when set, measures this speaker's microphone over the phrase
	// another speaker claims (it ended age ago): every speaker that heard
	// it claims, whether its own detector fired or not, so that the one
	// that heard it best answers, not the one whose detector fired first.
	// Settled takes the decision on a phrase measured so: the turn starts
	// when it won, the log says who answers when it did not. Both run
	// outside the arbiter's lock.
	Hear    func(age time.Duration) Claim
	Settled func(c Claim, d Decision)

	mu      sync.Mutex
	heard   []heard
	arrived chan struct{} // closed when a message arrives
	own     time.Time     // when the phrase this speaker last claimed ended
	stats   Stats
}

// Stats count the decisions.
type Stats struct {
	Answered  int    `json:"answered"`
	StoodDown int    `json:"stood_down"`
	Last      string `json:"last,omitempty"`
}

// NewArbiter is the arbiter of speaker self.
func NewArbiter(self string, window time.Duration, m Measure, peers func() int, send func([]byte)) *Arbiter {
	return &Arbiter{self: self, window: window, measure: m, peers: peers, send: send, arrived: make(chan struct{})}
}

// Decide tells the others c and settles it; it returns within the window.
// A phrase this speaker claimed already (its detector fired after it
// measured another's claim) is not claimed again: Decide says Repeat.
func (a *Arbiter) Decide(c Claim) Decision {
	end := time.Now().Add(-c.Age)
	a.mu.Lock()
	repeat := near(end, a.own)
	if !repeat {
		a.own = end
	}
	a.mu.Unlock()
	if repeat {
		return Decision{Repeat: true, Why: "claimed already"}
	}
	return a.decide(c)
}

// near reports whether phrases that ended at a and b are one utterance.
func near(a, b time.Time) bool {
	d := a.Sub(b)
	return !b.IsZero() && d < matchSpan && d > -matchSpan
}

func (a *Arbiter) decide(c Claim) Decision {
	start := time.Now()
	end := start.Add(-c.Age)
	c.Speaker = a.self
	a.send(encode(message{Kind: "claim", Claim: c}))
	others := a.peers()
	timer := time.NewTimer(a.window)
	defer timer.Stop()
	var rivals []Claim
	var answered string
	for {
		a.mu.Lock()
		rivals, answered = a.matchLocked(end)
		arrived := a.arrived
		a.mu.Unlock()
		if answered != "" || len(rivals) >= others {
			break
		}
		select {
		case <-arrived:
			continue
		case <-timer.C:
		}
		break
	}
	d := Decision{Winner: a.self, Rivals: len(rivals), Waited: time.Since(start), Win: true}
	busy := c.Busy
	switch {
	case answered != "":
		d.Win, d.Winner, d.Why = false, answered, answered+" answers already"
	default:
		for _, r := range rivals {
			if a.measure.Better(r, c) {
				d.Win, d.Winner = false, r.Speaker
				d.Why = fmt.Sprintf("%s heard it better (%s %.1f against %.1f)", r.Speaker, a.measure, a.measure.of(r), a.measure.of(c))
				c = r
			}
		}
	}
	if d.Win {
		c.Age = time.Since(end)
		a.send(encode(message{Kind: "answer", Claim: c}))
		d.Why = fmt.Sprintf("best of %d", len(rivals)+1)
	}
	a.mu.Lock()
	switch {
	case busy: // it could not answer: nothing to count
	case d.Win:
		a.stats.Answered++
		a.stats.Last = "answered (" + d.Why + ")"
	default:
		a.stats.StoodDown++
		a.stats.Last = "stood down: " + d.Why
	}
	a.mu.Unlock()
	return d
}

// matchLocked is what was heard of the utterance whose phrase ended at
// end: the latest claim of each other speaker, and who answers it already.
func (a *Arbiter) matchLocked(end time.Time) (rivals []Claim, answered string) {
	seen := map[string]int{}
	for _, h := range a.heard {
		if !near(h.end, end) || h.claim.Speaker == a.self {
			continue
		}
		if h.answer {
			answered = h.claim.Speaker
			continue
		}
		if i, ok := seen[h.claim.Speaker]; ok {
			rivals[i] = h.claim
			continue
		}
		seen[h.claim.Speaker] = len(rivals)
		rivals = append(rivals, h.claim)
	}
	return rivals, answered
}

// Receive takes a message from another member.
func (a *Arbiter) Receive(b []byte) {
	if len(b) > maxMsg {
		return
	}
	var m message
	if json.Unmarshal(b, &m) != nil || (m.Kind != "claim" && m.Kind != "answer") || m.Claim.Speaker == "" {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	end := now.Add(-m.Claim.Age)
	if m.Kind == "claim" && a.Hear != nil && m.Claim.Age >= 0 && m.Claim.Age <= maxAge && !near(end, a.own) {
		// Another speaker heard a phrase this one has not claimed: measure
		// it here too, and claim.
		a.own = end
		go a.respond(now, m.Claim)
	}
	keep := a.heard[:0]
	for _, h := range a.heard {
		if now.Sub(h.at) < maxAge+matchSpan {
			keep = append(keep, h)
		}
	}
	a.heard = append(keep, heard{at: now, end: end, answer: m.Kind == "answer", claim: m.Claim})
	if len(a.heard) > maxHeard {
		a.heard = a.heard[len(a.heard)-maxHeard:]
	}
	close(a.arrived)
	a.arrived = make(chan struct{})
}

// respond claims, with this speaker's own measure, the phrase another
// speaker claimed (theirs arrived at start).
func (a *Arbiter) respond(start time.Time, theirs Claim) {
	c := a.Hear(theirs.Age + time.Since(start))
	c.Model, c.Age = theirs.Model, theirs.Age+time.Since(start)
	d := a.decide(c)
	if a.Settled != nil {
		a.Settled(c, d)
	}
}

// Stats are the decisions so far.
func (a *Arbiter) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

func encode(m message) []byte {
	b, _ := json.Marshal(m)
	return b
}
