package main

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestSayPrintsTheReply: `agenthost say` waits for the reply and prints
// its text and what the server called for it (issue 43: it printed only
// the task, the text was reachable through a hook alone).
func TestSayPrintsTheReply(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim)
	ready(t, sim, 1)
	out, err := d.cli("say", "What time is it?")
	if err != nil {
		t.Fatalf("say: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^get_current_time says: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).MatchString(out) ||
		!strings.Contains(out, "called: get_current_time\n") {
		t.Fatalf("say printed no reply text or call:\n%s", out)
	}

	scripted := newSim(t, voicetest.Options{ReplyText: "It is tea time.\nThe kettle is on."})
	d = startHost(t, scripted)
	ready(t, scripted, 1)
	if out, err := d.cli("say", "hello"); err != nil || out != "It is tea time.\nThe kettle is on.\n" {
		t.Fatalf("say with a scripted reply: %v\n%q", err, out)
	}
	if out, err := d.cli("say", "--no-wait", "hello"); err != nil || !strings.HasPrefix(out, "sent on task ") {
		t.Fatalf("say --no-wait: %v\n%q", err, out)
	}
}

// TestSayWhenNoReplyComes: a reply that never comes ends the wait at
// --timeout with a message that says what to do, status 1; a reply the
// server fails says the server's error.
func TestSayWhenNoReplyComes(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		faults voicetest.Faults
		want   string
	}{
		"withheld": {voicetest.Faults{WithholdReplies: true}, "within 1s"},
		"failed":   {voicetest.Faults{FailReplies: "##ERROR:TTS_FAILED"}, "##ERROR:TTS_FAILED"},
	} {
		t.Run(name, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{Faults: c.faults})
			d := startHost(t, sim)
			ready(t, sim, 1)
			out, err := d.cli("say", "--timeout", "1s", "hello")
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "task ") {
				t.Fatalf("say: %v\n%s", err, out)
			}
			if name == "withheld" && !strings.Contains(out, "--timeout") {
				t.Errorf("the message does not say how to wait longer:\n%s", out)
			}
		})
	}
}

// TestSayWhenTheReplyIsCut: the server moves on to another turn (a
// barge-in: the demo's looping microphone) before the reply's end; say
// prints what came and says the reply was cut, rather than waiting out
// its timeout.
func TestSayWhenTheReplyIsCut(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{ReplyText: "The first words.", Pace: true, ReplyDuration: 5 * time.Minute})
	d := startHost(t, sim)
	ready(t, sim, 1)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := d.cli("say", "--timeout", "10m", "tell me a long story")
		done <- result{out, err}
	}()
	waitFor(t, sim, "the reply's text", func() bool {
		for _, r := range sim.Sent() {
			if r.Frame.Type == voice.TypeText && string(r.Frame.Payload) == "The first words." {
				return true
			}
		}
		return false
	})
	if err := sim.Send(voice.Frame{Type: voice.TypeText, Task: "nexttask", Payload: []byte("another turn")}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !strings.HasPrefix(r.out, "The first words.\n") || !strings.Contains(r.out, "cut off") || !strings.Contains(r.out, "nexttask") {
		t.Fatalf("say: %v\n%s", r.err, r.out)
	}
}
