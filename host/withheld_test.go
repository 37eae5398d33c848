package host

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestAFrameTheLinkWithholdsIsCounted: a microphone frame handed to the
// link just before the mute is dropped at the write (link.Options.Withheld);
// it is a frame not sent because the microphone is muted, so
// agenthost_microphone_frames_withheld_total (Device.Withheld) counts it.
func TestAFrameTheLinkWithholdsIsCounted(t *testing.T) {
	h := runSimHost(t, voicetest.Options{DisconnectDelay: time.Millisecond}, nil)
	sim := h.sim
	waitSim(t, sim, "the connection", func() bool { up, _ := h.link.Up(); return up && sim.Open() == 1 })
	dev := h.speaker.Device()
	if err := dev.SetMicMuted(services.CallerOwner, true); err != nil {
		t.Fatal(err)
	}
	before := dev.Stats().Withheld
	if err := h.link.Send(voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: 0, Payload: make([]byte, 960)}); err != nil {
		t.Fatal(err)
	}
	if err := h.link.Send(voice.Frame{Type: voice.TypeEnd, Task: "t1", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	// The writer takes audio before anything else: once the END is
	// there, the audio frame was written or dropped.
	waitSim(t, sim, "the END", func() bool {
		for _, r := range sim.Received() {
			if r.Frame.Type == voice.TypeEnd && r.Frame.Task == "t1" {
				return true
			}
		}
		return false
	})
	for _, r := range sim.Received() {
		if r.Frame.Type == voice.TypeAudio {
			t.Fatalf("an audio frame reached the server while the microphone was muted: %v", r.Frame)
		}
	}
	if got := dev.Stats().Withheld - before; got != 1 {
		t.Errorf("the frame the link withheld counts %d in the withheld frames, want 1", got)
	}
}
