package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestEveryTurnEndBringsTheMicrophoneBack: in VAD mode without echo
// cancellation the microphone pauses after LISTEN stop until the reply has
// played. However the turn ends (a reply without audio, an error STATUS, a
// reply on another task, a dropped link, no reply at all, a reply whose
// END_FRAME is lost), the host must start listening again on a new task and
// stream the microphone on it.
func TestEveryTurnEndBringsTheMicrophoneBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		o     voicetest.Options
		sets  []string
		after func(t *testing.T, sim *voicetest.Server) // once the first LISTEN stop was sent
		conn  int                                       // the connection the next turn starts on
	}{
		{name: "reply without audio", o: voicetest.Options{ReplyPCM: []byte{}}, conn: 1},
		{name: "error status", o: voicetest.Options{Faults: voicetest.Faults{FailReplies: "##ERROR:TTS_FAILED"}}, conn: 1},
		{name: "reply on a new task", o: voicetest.Options{Faults: voicetest.Faults{WithholdReplies: true}}, conn: 1,
			after: func(t *testing.T, sim *voicetest.Server) {
				if _, err := sim.Say("a reminder"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "link dropped", o: voicetest.Options{Faults: voicetest.Faults{WithholdReplies: true}}, conn: 2,
			after: func(t *testing.T, sim *voicetest.Server) { sim.Drop() }},
		{name: "no reply", o: voicetest.Options{Faults: voicetest.Faults{WithholdReplies: true}}, conn: 1,
			sets: []string{"conversation.reply_timeout=500ms"}},
		{name: "end frame lost", o: voicetest.Options{Faults: voicetest.Faults{DropEnd: true}}, conn: 1,
			sets: []string{"conversation.reply_timeout=500ms"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// A looping microphone: half a second of loud tone ("speech"), then silence.
			mic := filepath.Join(dir, "mic.raw")
			clip := append(audiotest.Tone(440, 16000, 500*time.Millisecond), audiotest.Silence(16000, 1500*time.Millisecond)...)
			if err := audiotest.WriteRaw(mic, clip); err != nil {
				t.Fatal(err)
			}
			tc.o.VADHang = 300 * time.Millisecond
			tc.o.Pace = true
			sim := newSim(t, tc.o)
			sets := append([]string{"audio.backend=file", "audio.input_file=" + mic, "audio.output_file=" + filepath.Join(dir, "speaker.wav"),
				"server.params.mode=vad"}, tc.sets...)
			startHost(t, sim, sets...)

			waitFor(t, sim, "the simulator's VAD to end the first turn", func() bool { return len(listens(sim, voice.ListenStop, 0)) > 0 })
			if tc.after != nil {
				tc.after(t, sim)
			}
			first := listens(sim, voice.ListenStart, 0)[0]
			var next string
			waitFor(t, sim, "listening on a new task", func() bool {
				for _, task := range listens(sim, voice.ListenStart, tc.conn) {
					if task != first {
						next = task
						return true
					}
				}
				return false
			})
			waitFor(t, sim, "microphone audio on the new task", func() bool { return len(sim.Audio(next)) > 0 })
		})
	}
}

// listens returns the tasks of the LISTEN frames in the given state: those
// the host sent for start, those the simulator sent for stop; conn 0 is any.
func listens(sim *voicetest.Server, state string, conn int) []string {
	frames := sim.Received()
	if state == voice.ListenStop {
		frames = sim.Sent()
	}
	var tasks []string
	for _, r := range frames {
		if r.Frame.Type == voice.TypeListen && (conn == 0 || r.Conn == conn) && bytes.Contains(r.Frame.Payload, []byte(`"state":"`+state+`"`)) {
			tasks = append(tasks, r.Frame.Task)
		}
	}
	return tasks
}

// TestConversationContentStaysOutOfTheInfoLog: at log level info the
// journal shows that turns happen, never what was said by either side.
func TestConversationContentStaysOutOfTheInfoLog(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "log.level=info")
	ready(t, sim, 1)
	out, err := d.cli("say", "--no-wait", "remind me of my aunt's birthday")
	if err != nil {
		t.Fatalf("say: %v %s", err, out)
	}
	task := strings.TrimSpace(strings.TrimPrefix(out, "sent on task"))
	waitFor(t, sim, "the reply's END_FRAME", func() bool {
		for _, r := range sim.Sent() {
			if r.Frame.Type == voice.TypeEnd && r.Frame.Task == task {
				return true
			}
		}
		return false
	})
	d.logShows("reply ended")
	for _, said := range []string{"aunt", "You said"} {
		if strings.Contains(d.log.String(), said) {
			t.Errorf("the info log holds what was said (%q)", said)
		}
	}
	if !strings.Contains(d.log.String(), "text turn sent") {
		t.Error("the info log does not show the turn")
	}
}
