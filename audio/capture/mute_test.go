package capture

import (
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/audio"
)

// constSource delivers a constant sample for ever.
type constSource struct{ v int16 }

func (s constSource) Read(p []int16) (int, error) {
	for i := range p {
		p[i] = s.v
	}
	return len(p), nil
}
func (constSource) Close() error { return nil }

// countStage counts the non-zero samples the stages after it see.
type countStage struct{ nonZero int }

func (*countStage) Name() string { return "count" }
func (c *countStage) Process(f *Frame) {
	for _, v := range f.PCM {
		if v != 0 {
			c.nonZero++
		}
	}
}
func (*countStage) Close() error { return nil }

// TestMuteSilencesBeforeOtherStages: while muted, no stage after the mute
// and no reader sees a sample; unmuted, the samples pass untouched.
func TestMuteSilencesBeforeOtherStages(t *testing.T) {
	var muted atomic.Bool
	muted.Store(true)
	after := &countStage{}
	c, err := NewChain(constSource{1234}, 16000, NewMute(muted.Load), after)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]int16, 960)
	audio.ReadFull(c, buf)
	for i, v := range buf {
		if v != 0 {
			t.Fatalf("sample %d is %d while muted", i, v)
		}
	}
	if after.nonZero != 0 {
		t.Fatalf("the next stage saw %d samples while muted", after.nonZero)
	}
	muted.Store(false)
	audio.ReadFull(c, buf)
	audio.ReadFull(c, buf)
	if buf[len(buf)-1] != 1234 || after.nonZero == 0 {
		t.Fatalf("unmuted: %d, the next stage saw %d", buf[len(buf)-1], after.nonZero)
	}
}
