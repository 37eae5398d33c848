package conversation

import (
	"testing"

	"github.com/agenthost/agenthost/proto/voice"
)

// discard is a Sender that keeps nothing, as the link keeps nothing of an
// audio frame it wrote at once.
type discard struct{ n int }

func (d *discard) Send(voice.Frame) error { d.n++; return nil }

// A turn streams a microphone frame every 60 ms: each one encoded into a
// new buffer is garbage the collector wakes for. The encoder reuses its
// buffer, since a Sender keeps no audio payload once Send returns.
func TestAStreamedMicrophoneFrameAllocatesNothing(t *testing.T) {
	out := &discard{}
	c, err := New(Options{}, out)
	if err != nil {
		t.Fatal(err)
	}
	c.up, c.talking, c.task = true, true, "t1"
	pcm := make([]int16, 960)
	c.sendMic(pcm)
	if allocs := testing.AllocsPerRun(100, func() { c.sendMic(pcm) }); allocs != 0 {
		t.Errorf("%.1f allocations per microphone frame, want none", allocs)
	}
	if out.n != 102 {
		t.Fatalf("%d frames sent, want 102: the test does not test sending", out.n)
	}
}
