package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestTheNoticeOfARingTheOwnerStoppedIsNotPlayed: ring → stop → phrase.
// A timer rings and the server answers the speaker's notice about it
// while the chime plays; `agenthost stop` ends the ringing, and the
// server's answer, held back behind the chime, is not played after it (it
// would talk over the owner's next phrase). The next phrase is heard, and
// its wake turn ends by itself.
func TestTheNoticeOfARingTheOwnerStoppedIsNotPlayed(t *testing.T) {
	var mic []int16
	mic = append(mic, audiotest.Say(t, audiotest.SpeechOptions{Voice: "en-gb", WPM: 140}, "hey jarvis, what time is it")...)
	mic = append(mic, make([]int16, 4*16000)...)
	dir := t.TempDir()
	input := filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(input, mic); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "speaker.wav")
	earcon := filepath.Join(dir, "wake.s16")
	if err := audiotest.WriteRaw(earcon, audiotest.Tone(1500, 16000, 300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	hooks := newHookLog(t, dir)
	sim := newSim(t, voicetest.Options{ReplyDuration: time.Second}) // replies: 1 s of 880 Hz
	d := startHost(t, sim, append(wakeSets(t, input), "server.params.mode=manual", "plugins.state_dir="+filepath.Join(dir, "state"),
		"audio.output_file="+out, "conversation.hooks.timer="+hooks.set(), "device.ring.timeout=1h", "device.volume=100", "conversation.earcons.wake="+earcon)...)
	ready(t, sim, 1)
	// The phrase comes round every 6 s: no turn until the timer's part is done.
	if o, err := d.cli("mic", "off"); err != nil || !strings.Contains(o, "microphone off") {
		t.Fatalf("agenthost mic off: %v %s", err, o)
	}
	if res := call(t, sim, "set_timer", `{"seconds":1,"label":"tea"}`); !res.Success {
		t.Fatalf("set_timer: %+v", res)
	}
	hooks.wait(t, "tea", "ringing")
	var notice string
	waitFor(t, sim, "the server's whole answer to the notice", func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeText && strings.Contains(string(r.Frame.Payload), "[speaker notice]") {
				notice = r.Frame.Task
			}
		}
		for _, s := range sim.Sent() {
			if notice != "" && s.Frame.Type == voice.TypeEnd && s.Frame.Task == notice {
				return true
			}
		}
		return false
	})
	// The chime has played for a while (0.6 s of the microphone's clock)
	// before the owner stops it: the server may answer within milliseconds.
	d.waitWithheld(t, 10)
	if o, err := d.cli("stop"); err != nil || !strings.Contains(o, "stopped 1 ringing") {
		t.Fatalf("agenthost stop: %v %s", err, o)
	}
	hooks.wait(t, "tea", "stopped")
	// 6 s of the microphone's clock: what still rang, and the answer after
	// it if it were played, have played before the phrase is heard.
	d.waitWithheld(t, 100)
	// The phrase is heard (its earcon marks it in the speaker's file), and
	// its turn ends by itself.
	if o, err := d.cli("mic", "on"); err != nil || !strings.Contains(o, "microphone on") {
		t.Fatalf("agenthost mic on: %v %s", err, o)
	}
	waitFor(t, sim, "the wake turn's END", func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeEnd && r.Frame.Task != notice {
				return true
			}
		}
		return false
	})
	if err := d.stop(); err != nil { // the speaker's file is complete
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || len(b) < 44 {
		t.Fatalf("the speaker's file: %v", err)
	}
	chimes, between, woke := replyAfterChime(audiotest.BytesToSamples(b[44:]))
	t.Logf("the speaker played %d windows of chime; %d windows of the server's answer after the last and before the wake earcon", chimes, between)
	if chimes == 0 || !woke {
		t.Fatalf("the speaker's file lacks the chime (%d windows) or the wake earcon (%v)", chimes, woke)
	}
	// One or two frames of it may have played in a gap between chimes,
	// just before the stop.
	if between > 2 {
		t.Errorf("the server's answer to the notice played after the owner stopped the ring (%d windows of 60 ms)", between)
	}
}

// replyAfterChime splits what the speaker played into 60 ms windows and
// counts the loud ones of the ring's chime (1175 Hz), and those of the
// simulator's reply (880 Hz) after the last chime and before the wake
// earcon (1500 Hz), if it played.
func replyAfterChime(s []int16) (chimes, between int, earcon bool) {
	const w = 960
	last := -1
	var reply []int
	for i := 0; i+w <= len(s) && !earcon; i += w {
		win := s[i : i+w]
		if audiotest.RMS(win) < 0.01 {
			continue
		}
		switch f := audiotest.PeakFrequency(win, 16000, 200, 2000, 10); {
		case f > 1150 && f < 1200:
			chimes++
			last = i
		case f > 860 && f < 900:
			reply = append(reply, i)
		case f > 1480 && f < 1520:
			earcon = true
		}
	}
	for _, i := range reply {
		if i > last {
			between++
		}
	}
	return chimes, between, earcon
}
