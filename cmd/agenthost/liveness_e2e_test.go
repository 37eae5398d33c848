package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// livenessHost is a host whose link_down, link_up and turn_failed hooks
// append "EVENT REASON" lines to a file, with the file backend's speaker
// (and a microphone, for push-to-talk) and metrics on.
type livenessHost struct {
	*fileHost
	events  string // the hooks' file
	speaker string // the WAV the speaker writes (complete once the host stopped)
}

func startLivenessHost(t *testing.T, sim *voicetest.Server, conf map[string]any) *livenessHost {
	t.Helper()
	dir := t.TempDir()
	h := &livenessHost{events: filepath.Join(dir, "events"), speaker: filepath.Join(dir, "speaker.wav")}
	mic := filepath.Join(dir, "mic.raw")
	if err := audiotest.WriteRaw(mic, audiotest.Tone(1000, 16000, 300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	hook := `echo "$AGENTHOST_EVENT $AGENTHOST_REASON" >> ` + h.events
	h.fileHost = startFileHost(t, sim, merge(map[string]any{
		"audio": map[string]any{"backend": "file", "input_file": mic, "output_file": h.speaker},
		"conversation": map[string]any{"hooks": map[string]any{
			"link_down": hook, "link_up": hook, "turn_failed": hook,
		}},
		"metrics": map[string]any{"listen": "127.0.0.1:0"},
	}, conf))
	return h
}

// eventLines returns the hooks' lines so far.
func (h *livenessHost) eventLines() []string {
	b, _ := os.ReadFile(h.events)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// waitEvent waits until n lines of the hooks' file start with event.
func (h *livenessHost) waitEvent(t *testing.T, event string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := 0
		for _, l := range h.eventLines() {
			if strings.HasPrefix(l, event+" ") || l == event {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s hook ran %d times, want %d; hooks so far: %q", event, got, n, h.eventLines())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// linkStatus is the link's part of `agenthost status`.
type linkStatus struct {
	Link struct {
		State      string `json:"state"`
		Outages    int64  `json:"outages"`
		LastOutage string `json:"last_outage"`
	} `json:"link"`
}

func (h *livenessHost) link(t *testing.T) linkStatus {
	t.Helper()
	out, err := h.cli("status")
	if err != nil {
		t.Fatalf("agenthost status: %v\n%s", err, out)
	}
	var st linkStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("agenthost status: %v\n%s", err, out)
	}
	return st
}

func (h *livenessHost) metrics(t *testing.T) string {
	t.Helper()
	url := regexp.MustCompile(`url=(http://\S+/metrics)`).FindStringSubmatch(h.logLine("metrics served"))[1]
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// replyEnded reports whether the simulator ended a reply for task on conn
// (0: on any connection).
func replyEnded(sim *voicetest.Server, conn int, task string) bool {
	for _, r := range sim.Sent() {
		if (conn == 0 || r.Conn == conn) && r.Frame.Type == voice.TypeEnd && r.Frame.Task == task {
			return true
		}
	}
	return false
}

var sentOnTask = regexp.MustCompile(`task (\w{8})`)

// turn starts a turn with trigger ("say" or "talk") and returns its task,
// or the CLI's error output.
func (h *livenessHost) turn(t *testing.T, trigger string) (task string, failed string) {
	t.Helper()
	var out string
	var err error
	switch trigger {
	case "say":
		out, err = h.cli("say", "--no-wait", "are you there?")
	case "talk":
		if out, err = h.cli("talk", "start"); err == nil {
			time.Sleep(200 * time.Millisecond) // some microphone audio
			var stop string
			stop, err = h.cli("talk", "stop")
			out += stop
		}
	}
	if err != nil {
		return "", out
	}
	m := sentOnTask.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s: no task in %q", trigger, out)
	}
	return m[1], ""
}

// TestABlackHoleIsFoundWhenATurnStarts: the link is up, the path to the
// server goes silent without a FIN (the simulator's black hole: the
// connection stays open and nothing is answered), and a turn starts. Within
// server.liveness.answer_timeout the host drops the connection and makes a
// new one to the still reachable server; the owner hears the "can't reach
// the server" earcon, the link_down and link_up hooks run, status and
// metrics show the outage, and the next turn is answered.
func TestABlackHoleIsFoundWhenATurnStarts(t *testing.T) {
	t.Parallel()
	for _, trigger := range []string{"say", "talk"} {
		t.Run(trigger, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{})
			h := startLivenessHost(t, sim, nil)
			ready(t, sim, 1)
			task, failed := h.turn(t, trigger)
			if failed != "" {
				t.Fatalf("the first turn: %s", failed)
			}
			waitFor(t, sim, "the first reply", func() bool { return replyEnded(sim, 1, task) })

			if n := sim.BlackHole(); n != 1 {
				t.Fatalf("%d connections black-holed", n)
			}
			_, failed = h.turn(t, trigger)
			if trigger == "say" && !strings.Contains(failed, "did not answer") {
				t.Errorf("say into the black hole: want an error that the server did not answer, got %q", failed)
			}
			waitFor(t, sim, "a new connection, authenticated and registered", func() bool {
				return len(sim.Auths()) == 2 && registersOn(sim, 2) == 1
			})
			h.waitEvent(t, "link_down", 1)
			h.waitEvent(t, "link_up", 2)
			h.waitEvent(t, "turn_failed", 1)
			st := h.link(t)
			if st.Link.State != "up" || st.Link.Outages != 1 || !strings.Contains(st.Link.LastOutage, "did not answer") {
				t.Errorf("status after the outage: %+v", st.Link)
			}
			m := h.metrics(t)
			for _, want := range []string{"agenthost_link_up 1", `agenthost_link_outages_total{reason="no_answer"} 1`, "agenthost_link_connections_total 2"} {
				if !strings.Contains(m, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}

			task, failed = h.turn(t, trigger)
			if failed != "" {
				t.Fatalf("the turn after the reconnect: %s", failed)
			}
			waitFor(t, sim, "the reply after the reconnect", func() bool { return replyEnded(sim, 2, task) })
			h.waitPlayed("earcon", 0.5) // the file fills as the earcon plays
			if err := h.stop(); err != nil {
				t.Fatalf("exit: %v", err)
			}
			if !earconIn(t, h.speaker) {
				t.Error("the speaker did not play the can't-reach-the-server earcon")
			}
			for _, l := range h.eventLines() {
				if strings.HasPrefix(l, "link_down") && !strings.Contains(l, "did not answer") {
					t.Errorf("the link_down hook's reason: %q", l)
				}
			}
		})
	}
}

// TestATurnTheServerNeverAcknowledgesFailsWithoutReconnecting: the server
// answers PINGs but never acknowledges a turn. Each turn fails cleanly after
// conversation.reply_timeout, the owner hears the earcon and the
// turn_failed hook runs, and the link stays up: no reconnect, no loop.
func TestATurnTheServerNeverAcknowledgesFailsWithoutReconnecting(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{Faults: voicetest.Faults{IgnoreTurns: true}})
	h := startLivenessHost(t, sim, map[string]any{"conversation": map[string]any{"reply_timeout": "1s"}})
	ready(t, sim, 1)
	for i, trigger := range []string{"say", "talk", "say"} {
		if _, failed := h.turn(t, trigger); failed != "" {
			t.Fatalf("turn %d (%s) was refused although the server answers PINGs: %s", i+1, trigger, failed)
		}
		h.waitEvent(t, "turn_failed", i+1)
	}
	if n := sim.Connections(); n != 1 {
		t.Errorf("%d connections: the link was torn down although the server answers PINGs", n)
	}
	pongs := 0
	for _, r := range sim.Sent() {
		if string(r.Frame.Payload) == voice.StatusPong {
			pongs++
		}
	}
	if pongs < 3 {
		t.Errorf("%d PONGs: the host did not ask whether the server is there when the turns started", pongs)
	}
	for _, l := range h.eventLines() {
		if strings.HasPrefix(l, "link_down") {
			t.Errorf("link_down ran: %q", l)
		}
	}
	if st := h.link(t); st.Link.State != "up" || st.Link.Outages != 0 {
		t.Errorf("status: %+v", st.Link)
	}
	h.waitPlayed("earcon", 0.5) // the file fills as the earcons play
	if err := h.stop(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if !earconIn(t, h.speaker) {
		t.Error("the speaker did not play the earcon for the failed turns")
	}
}

// earconIn reports whether the speaker's WAV holds the built-in
// can't-reach-the-server earcon: a falling pair of notes (see
// conversation.UnreachableEarcon), found as a window of each note.
func earconIn(t *testing.T, wav string) bool {
	t.Helper()
	s, _, _, err := audiotest.ReadWAV(wav)
	if err != nil {
		t.Fatal(err)
	}
	high, low := false, false
	const w = 1024
	for i := 0; i+w <= len(s); i += w / 4 {
		win := s[i : i+w]
		if audiotest.RMS(win) < 0.005 { // the earcon plays at the device's volume (70: -15 dB)
			continue
		}
		switch f := audiotest.PeakFrequency(win, 16000, 200, 2000, 5); {
		case f > 645 && f < 675:
			high = true
		case low || !high:
		case f > 425 && f < 455:
			low = true
		}
	}
	return high && low
}
