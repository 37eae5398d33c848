package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestServerFramesDoNotStarveTheOwnersCues: the voice server sends EMOJI
// frames whose hook (as the example's show-face) is still running; the
// owner's `mic off` and `mic on` still run the mute hook, and a
// push-to-talk turn still runs listen_start and listen_stop (an LED that
// shows the microphone's state is never left wrong by the server).
func TestServerFramesDoNotStarveTheOwnersCues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	t.Cleanup(func() { os.WriteFile(release, nil, 0o600) })
	emojis := filepath.Join(dir, "emoji.log")
	cues := filepath.Join(dir, "cues.log")
	mic := toneFile(t, filepath.Join(dir, "mic.wav"), 30)
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "audio.backend=file", "audio.input_file="+mic, "server.params.mode=manual",
		"conversation.hooks.emoji=echo $AGENTHOST_EMOJI >> "+emojis+"; while [ ! -e "+release+" ]; do sleep 0.05; done",
		"conversation.hooks.mute=echo $AGENTHOST_EVENT $AGENTHOST_DEVICE $AGENTHOST_MUTED >> "+cues,
		"conversation.hooks.listen_start=echo $AGENTHOST_EVENT >> "+cues,
		"conversation.hooks.listen_stop=echo $AGENTHOST_EVENT >> "+cues)
	ready(t, sim, 1)
	for _, e := range []string{"happy", "sad", "wink", "cool", "sleepy", "laugh"} {
		if err := sim.Send(voice.EmojiFrame("faces", voice.Emoji{Emoji: e})); err != nil {
			t.Fatal(err)
		}
	}
	lines := func(path string) []string {
		b, _ := os.ReadFile(path)
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
	}
	waitLines(t, "the emoji hooks to run (and hold on)", func() bool { return len(lines(emojis)) >= 2 })

	if out, err := d.cli("mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
		t.Fatalf("agenthost mic off: %v %s", err, out)
	}
	waitLines(t, "the mute hook of `mic off`", func() bool { return strings.Contains(strings.Join(lines(cues), ","), "mute_microphone_true") })
	if out, err := d.cli("mic", "on"); err != nil || !strings.Contains(out, "microphone on") {
		t.Fatalf("agenthost mic on: %v %s", err, out)
	}
	waitLines(t, "the mute hook of `mic on`", func() bool { return strings.Contains(strings.Join(lines(cues), ","), "mute_microphone_false") })
	if out, err := d.cli("talk", "start"); err != nil {
		t.Fatalf("agenthost talk start: %v %s", err, out)
	}
	waitLines(t, "the listen_start hook", func() bool { return strings.Contains(strings.Join(lines(cues), ","), "listen_start") })
	if out, err := d.cli("talk", "stop"); err != nil {
		t.Fatalf("agenthost talk stop: %v %s", err, out)
	}
	waitLines(t, "the listen_stop hook", func() bool { return strings.Contains(strings.Join(lines(cues), ","), "listen_stop") })
	if n := len(lines(emojis)); n > 2 {
		t.Errorf("%d emoji hooks ran at once: the server's frames may hold 2 of the hooks' slots", n)
	}
}

// waitLines polls cond for a generous while.
func waitLines(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: it never came", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
