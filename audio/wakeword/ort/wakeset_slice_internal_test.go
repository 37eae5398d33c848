package ort_test

import (
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// TestTheTuningSliceHoldsBackEveryWindowThatHearsASliceVoice: a window is
// held back from training when a clip of a slice voice is at its end or
// within its audio before it, and every window of a held-back stream.
func TestTheTuningSliceHoldsBackEveryWindowThatHearsASliceVoice(t *testing.T) {
	const gap = 4 * wakeword.Rate // a clip every 4 s, each 1 s long
	c := &condition{name: "clean", kind: "positive"}
	voices := []string{"en-us", "en-gb+m1", "en-us"}
	for k, v := range voices {
		at := lead + k*gap
		c.clips = append(c.clips, placed{name: v, voice: v, start: at, phraseAt: at + wakeword.Rate})
	}
	neg := &condition{name: "ordinary speech and music 3", kind: "negative"}
	sl := &tuningSlice{voices: map[string]bool{"en-gb+m1": true}, negs: map[int]bool{1: true}}
	s := &embSeq{first: 0, step: headStep, emb: make([]float32, 96*(3*gap+2*lead)/headStep)}
	slice := [2]int64{int64(c.clips[1].start - lead), int64(c.clips[2].start-lead) + wakeword.Rate*21/10}
	for j := 0; j < s.n(); j++ {
		end := s.end(j)
		want := end >= slice[0] && end < slice[1]
		if got := sl.heldBack(0, c, s, j); got != want {
			t.Fatalf("window ending at %.2f s: held back %v, want %v", float64(end)/wakeword.Rate, got, want)
		}
		if !sl.heldBack(1, neg, s, j) {
			t.Fatalf("window ending at %.2f s of a held-back stream is trained on", float64(end)/wakeword.Rate)
		}
	}
	if got := sl.sliceOf(c).clips; len(got) != 1 || got[0].voice != "en-gb+m1" {
		t.Fatalf("the slice's clips: %v, want the one of en-gb+m1", got)
	}
}
