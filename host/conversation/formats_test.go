package conversation

import (
	"slices"
	"testing"
	"time"
)

// TestSetFormatsWaitsForTheConnectionToEnd: new audio formats (a reload)
// apply at once with no connection up; with one up, which speaks the old
// ones to its end, they apply when it goes down, before the next comes up.
func TestSetFormatsWaitsForTheConnectionToEnd(t *testing.T) {
	c, err := New(Options{}, &sent{})
	if err != nil {
		t.Fatal(err)
	}
	formats := func() (in, out bool) { cd := c.codec.Load(); return cd.enc != nil, cd.dec != nil }
	if err := c.SetFormats(true, false); err != nil {
		t.Fatal(err)
	}
	if in, out := formats(); !in || out {
		t.Fatalf("no connection up: input opus %v, output opus %v after SetFormats(true, false)", in, out)
	}
	c.LinkUp()
	if err := c.SetFormats(false, true); err != nil {
		t.Fatal(err)
	}
	if in, out := formats(); !in || out {
		t.Fatalf("the connection up: input opus %v, output opus %v, want its own (true, false)", in, out)
	}
	c.LinkDown(nil)
	if in, out := formats(); in || !out {
		t.Fatalf("after the connection: input opus %v, output opus %v, want the new (false, true)", in, out)
	}
}

// TestOpusFollowsTheAudioRateAndFrame: audio.rate and audio.frame may be
// any Opus allows (config checks them); the microphone's encoder takes
// frames of that length at that rate, and the reply's decoder gives
// audio at that rate, not its 16 kHz, 60 ms default.
func TestOpusFollowsTheAudioRateAndFrame(t *testing.T) {
	c, err := New(Options{InputOpus: true, OutputOpus: true, Rate: 24000, Frame: 20 * time.Millisecond}, &sent{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.encode(c.codec.Load().enc, make([]int16, 480)) // 20 ms at 24 kHz
	if err != nil {
		t.Fatalf("a 20 ms frame at 24 kHz does not encode: %v", err)
	}
	pcm, err := c.decode(slices.Clone(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(pcm) != 480 {
		t.Errorf("20 ms of Opus decodes to %d samples, want 480 at 24 kHz", len(pcm))
	}
}
