package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestAPushedReplyOpensNoFollowUpWindow: with conversation.wake_word.follow_up
// set and people talking in the room, a reply the server pushes unasked
// opens no follow-up window: nothing of the room is sent after it. The
// reply to the owner's `agenthost say` does open it.
func TestAPushedReplyOpensNoFollowUpWindow(t *testing.T) {
	var room []int16
	for range 3 {
		room = append(room, audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 160}, "and then we went down to the market to buy some bread and cheese")...)
		room = append(room, make([]int16, 3200)...)
	}
	input := filepath.Join(t.TempDir(), "room.s16")
	if err := audiotest.WriteRaw(input, room); err != nil {
		t.Fatal(err)
	}
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual", "conversation.wake_word.follow_up=5s")...)
	d.logShows("wake word on")
	ready(t, sim, 1)
	task, err := sim.Say("Here is the news.")
	if err != nil {
		t.Fatal(err)
	}
	d.logShows(`msg="reply ended" component=conversation task=` + task)
	time.Sleep(5 * time.Second) // the reply plays, and a window would be open now
	if n := audioFrames(sim); n != 0 {
		t.Fatalf("%d AUDIO frames of the room sent after a reply the server pushed", n)
	}
	if out, err := d.cli("say", "--no-wait", "what is new"); err != nil || !strings.Contains(out, "sent") {
		t.Fatalf("agenthost say: %v %s", err, out)
	}
	waitFor(t, sim, "the room streamed in the window after the owner's turn", func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeAudio {
				return true
			}
		}
		return false
	})
}

// TestUnmutingResumesNoWakeTurn: a wake turn open when the owner mutes the
// microphone ends with the mute; after `agenthost mic on`, with people
// still talking in the room and no wake phrase, no AUDIO frame is sent.
func TestUnmutingResumesNoWakeTurn(t *testing.T) {
	say := func(text string) []int16 {
		return audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 170}, text)
	}
	var mic []int16
	mic = append(mic, make([]int16, 16000)...)
	mic = append(mic, say("hey jarvis")...)
	talk := say("and then we went down to the market and bought some bread and some cheese and some apples")
	talk = talk[voicedStart(talk):voicedEnd(talk)]
	for range 6 { // about 30 s of talk, without a pause that ends the turn
		mic = append(mic, talk...)
		mic = append(mic, make([]int16, 1600)...)
	}
	mic = append(mic, make([]int16, 16000)...)
	input := filepath.Join(t.TempDir(), "mic.s16")
	if err := audiotest.WriteRaw(input, mic); err != nil {
		t.Fatal(err)
	}
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual")...)
	// The phrase comes round every 32 s: a detector that was not up yet
	// the first time hears the next.
	ctx, cancel := context.WithTimeout(context.Background(), 75*time.Second)
	defer cancel()
	if err := sim.WaitFor(ctx, func() bool { return audioFrames(sim) >= 10 }); err != nil {
		t.Fatalf("no wake turn: %v", err)
	}
	ends := func() int {
		n := 0
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeEnd {
				n++
			}
		}
		return n
	}
	if n := ends(); n != 0 {
		t.Fatalf("the wake turn ended (%d ENDs) before the mute: the room's talk has a pause", n)
	}
	if out, err := d.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v %s", err, out)
	}
	waitFor(t, sim, "the turn's END at the mute", func() bool { return ends() == 1 })
	d.waitWithheld(t, 20)
	before := audioFrames(sim)
	if out, err := d.cli("mic", "on"); err != nil || !strings.Contains(out, "microphone on") {
		t.Fatalf("agenthost mic on: %v %s", err, out)
	}
	time.Sleep(3 * time.Second) // the room talks on
	if n := audioFrames(sim) - before; n != 0 {
		t.Fatalf("%d AUDIO frames of the room sent after the unmute with no wake phrase, want 0", n)
	}
}

// TestAFailedTurnOpensNoFollowUpWindow: with conversation.wake_word.follow_up
// set and people talking in the room, the owner's turn that the server
// never answers (it fails at conversation.reply_timeout), or answers with
// an error, ends with the unreachable earcon and opens no follow-up
// window: nothing of the room is sent after it. Only a reply that was
// heard opens the window (TestAPushedReplyOpensNoFollowUpWindow).
func TestAFailedTurnOpensNoFollowUpWindow(t *testing.T) {
	var room []int16
	for range 3 {
		room = append(room, audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 160}, "and then we went down to the market to buy some bread and cheese")...)
		room = append(room, make([]int16, 3200)...)
	}
	input := filepath.Join(t.TempDir(), "room.s16")
	if err := audiotest.WriteRaw(input, room); err != nil {
		t.Fatal(err)
	}
	for name, faults := range map[string]voicetest.Faults{
		"never answered": {WithholdReplies: true},
		"server error":   {FailReplies: "##ERROR:TTS_FAILED"},
	} {
		t.Run(name, func(t *testing.T) {
			sim := newSim(t, voicetest.Options{Faults: faults})
			d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual", "conversation.wake_word.follow_up=5s",
				"conversation.reply_timeout=2s")...)
			d.logShows("wake word on")
			ready(t, sim, 1)
			if out, err := d.cli("say", "--no-wait", "what is new"); err != nil {
				t.Fatalf("agenthost say: %v %s", err, out)
			}
			d.logShows("the turn failed")
			time.Sleep(6 * time.Second) // the earcon plays, and a window would be open now
			if n := audioFrames(sim); n != 0 {
				t.Fatalf("%d AUDIO frames of the room sent after a failed turn", n)
			}
			if strings.Contains(d.log.String(), "follow-up window open") {
				t.Fatal("the follow-up window opened after a failed turn")
			}
		})
	}
}
