package conversation

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
)

// attention stands in for the link's Attend: it records why each was
// asked for and how many are held.
type attention struct {
	mu   sync.Mutex
	whys []string
	held int
}

func (a *attention) attend(why string) (<-chan error, func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.whys = append(a.whys, why)
	a.held++
	var once sync.Once
	answer := make(chan error, 1)
	answer <- nil
	return answer, func() {
		once.Do(func() {
			a.mu.Lock()
			a.held--
			a.mu.Unlock()
		})
	}
}

func (a *attention) state() (whys []string, held int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.whys), a.held
}

// hookLog returns hooks that append "EVENT|TASK|REASON" lines to a file,
// and a reader of those lines.
func hookLog(t *testing.T, events ...string) (map[string]string, func() []string) {
	file := filepath.Join(t.TempDir(), "events")
	hooks := map[string]string{}
	for _, e := range events {
		hooks[e] = `echo "$AGENTHOST_EVENT|$AGENTHOST_TASK|$AGENTHOST_REASON" >> ` + file
	}
	return hooks, func() []string {
		b, _ := os.ReadFile(file)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

func hasLine(lines []string, prefix, contains string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, contains) {
			return true
		}
	}
	return false
}

// earconPlayed reports whether the built-in earcon's two notes reached the sink.
func earconPlayed(r *rig) bool {
	var all []int16
	for _, w := range r.sink.since(0) {
		all = append(all, w...)
	}
	high, low := false, false
	for i := 0; i+1024 <= len(all); i += 256 {
		w := all[i : i+1024]
		if !loud(w) {
			continue
		}
		f := audiotest.PeakFrequency(w, 16000, 200, 2000, 5)
		high = high || (f > 640 && f < 680)
		low = low || (high && f > 420 && f < 460)
	}
	return high && low
}

// TestATurnOfWhichNothingComesFailsAndTheOwnerIsTold: the server answers
// the PING but nothing of the turn comes within reply_timeout: the turn
// fails, the earcon plays, turn_failed runs with the reason, and the
// link's attention is given back.
func TestATurnOfWhichNothingComesFailsAndTheOwnerIsTold(t *testing.T) {
	hooks, lines := hookLog(t, "turn_failed", "link_up")
	att := &attention{}
	r := newRig(t, Options{Mode: "manual", ReplyTimeout: 300 * time.Millisecond, Attend: att.attend, Hooks: hooks, EarconUnreachable: config.EarconBuiltin})
	r.c.LinkUp()
	task, answer, err := r.c.Say("hello")
	if err != nil || answer == nil {
		t.Fatalf("say: %v %v", answer, err)
	}
	eventually(t, "the turn_failed hook", func() bool { return hasLine(lines(), "turn_failed|"+task+"|", "reply_timeout") })
	eventually(t, "the earcon", func() bool { return earconPlayed(r) })
	if !hasLine(lines(), "link_up", "") {
		t.Errorf("no link_up hook: %q", lines())
	}
	whys, held := att.state()
	if held != 0 || len(whys) != 1 || whys[0] != "a turn started" {
		t.Fatalf("attention: %q, %d held", whys, held)
	}
}

// TestAnAnsweredTurnGivesTheAttentionBack: a push-to-talk turn holds the
// link's attention from its start until its reply's END_FRAME; nothing fails.
// In virtual time: the reply comes at once after TalkStop, however busy the
// machine (in real time a test late by reply_timeout failed the turn).
func TestAnAnsweredTurnGivesTheAttentionBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooks, lines := hookLog(t, "turn_failed")
		att := &attention{}
		r := newRig(t, Options{Mode: "manual", ReplyTimeout: 300 * time.Millisecond, Attend: att.attend, Hooks: hooks})
		r.c.LinkUp()
		task, err := r.c.TalkStart()
		if err != nil {
			t.Fatal(err)
		}
		if _, held := att.state(); held != 1 {
			t.Fatalf("%d attentions held during the turn", held)
		}
		time.Sleep(500 * time.Millisecond) // talking longer than reply_timeout is no failure
		r.c.TalkStop()
		r.c.Frame(reply(task, 1, 60*time.Millisecond))
		r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: 2})
		if _, held := att.state(); held != 0 {
			t.Fatalf("%d attentions held after the reply", held)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if l := lines(); hasLine(l, "turn_failed", "") {
			t.Fatalf("an answered turn failed: %q", l)
		}
	})
}

// TestALinkThatGoesDownMidTurnTellsTheOwner: an outage during a turn runs
// link_down and fails the turn with the link's reason; pressing the button
// while the link is down fails at once, owner told; a planned end (nil) is
// no outage.
func TestALinkThatGoesDownMidTurnTellsTheOwner(t *testing.T) {
	hooks, lines := hookLog(t, "turn_failed", "link_down")
	att := &attention{}
	r := newRig(t, Options{Mode: "manual", Attend: att.attend, Hooks: hooks, EarconUnreachable: config.EarconBuiltin})
	r.c.LinkUp()
	task, err := r.c.TalkStart()
	if err != nil {
		t.Fatal(err)
	}
	r.c.LinkDown(errors.New("the voice server did not answer within 5s"))
	eventually(t, "link_down and turn_failed", func() bool {
		l := lines()
		return hasLine(l, "link_down||", "did not answer") && hasLine(l, "turn_failed|"+task+"|", "cannot be reached")
	})
	if _, held := att.state(); held != 0 {
		t.Fatalf("%d attentions held after the link went down", held)
	}
	if _, err := r.c.TalkStart(); err == nil {
		t.Fatal("a turn started while the link is down")
	}
	eventually(t, "turn_failed for the refused turn", func() bool { return hasLine(lines(), "turn_failed||", "not connected") })
	eventually(t, "the earcon", func() bool { return earconPlayed(r) })
	r.c.LinkUp()
	r.c.LinkDown(nil)
	time.Sleep(300 * time.Millisecond)
	if n := strings.Count(strings.Join(lines(), "\n"), "link_down"); n != 1 {
		t.Fatalf("link_down ran %d times; a planned end is no outage", n)
	}
}

// TestTheBuiltinEarcon: two notes, high then low, within half a second.
func TestTheBuiltinEarcon(t *testing.T) {
	e := UnreachableEarcon(16000)
	if d := time.Duration(len(e)) * time.Second / 16000; d < 300*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("%s long", d)
	}
	first, last := e[:1600], e[len(e)-1600:]
	if f := audiotest.PeakFrequency(first, 16000, 200, 2000, 5); f < 640 || f > 680 {
		t.Errorf("first note %v Hz", f)
	}
	if f := audiotest.PeakFrequency(last, 16000, 200, 2000, 5); f < 420 || f > 460 {
		t.Errorf("last note %v Hz", f)
	}
	if e[0] != 0 || e[len(e)-1] != 0 {
		t.Error("the earcon does not start and end at zero (it would click)")
	}
}

// TestVADAsksWhenListeningStartsAndWatchesTheReply: each LISTEN cycle
// sends one PING (listening may last long), and the turn is watched from
// the server's LISTEN stop until its reply ends.
func TestVADAsksWhenListeningStartsAndWatchesTheReply(t *testing.T) {
	att := &attention{}
	r := newRig(t, Options{Mode: "vad", Attend: att.attend})
	r.c.LinkUp()
	eventually(t, "LISTEN start", func() bool { return len(r.out.all()) >= 1 })
	if whys, held := att.state(); !slices.Equal(whys, []string{"listening started"}) || held != 0 {
		t.Fatalf("listening: %q, %d held", whys, held)
	}
	a := r.out.all()[0].Task
	r.c.Frame(voice.ListenFrame(a, voice.ListenStop, "vad"))
	if whys, held := att.state(); len(whys) != 2 || whys[1] != "the turn ended" || held != 1 {
		t.Fatalf("awaiting the reply: %q, %d held", whys, held)
	}
	r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: a, Seq: 1})
	eventually(t, "the next cycle's PING, the reply's attention given back", func() bool {
		whys, held := att.state()
		return len(whys) == 3 && whys[2] == "listening started" && held == 0
	})
}

// TestALinkDownIsNoBargeIn: a reply cut off because the link went down (or
// the host stops) is dropped, but it is not a barge-in: nobody interrupted
// it, and the barge-in count (a metric, and what the echo tests read) and
// the log say only what a new turn cut short.
func TestALinkDownIsNoBargeIn(t *testing.T) {
	logs := &testbin.Buffer{}
	r := newRig(t, Options{Mode: "manual", Log: slog.New(slog.NewTextHandler(logs, nil))})
	r.c.LinkUp()
	playingReply(t, r)
	r.c.LinkDown(nil)
	if st := r.c.Stats(); st.BargeIns != 0 {
		t.Errorf("barge-ins %d after the link went down mid-reply, want 0", st.BargeIns)
	}
	if strings.Contains(logs.String(), "barge-in") {
		t.Errorf("the log calls the link's end a barge-in:\n%s", logs)
	}
}
