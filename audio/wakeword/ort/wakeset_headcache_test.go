package ort_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"testing"

	"github.com/agenthost/agenthost/audio/audiotest"
)

// writeConditions writes what the head learns from conds to h: each
// condition's name, kind, clips and audio (a switch that adds or changes
// training material changes them, so a head trained on other material is
// never taken from the cache for it).
func writeConditions(h io.Writer, conds []*condition) {
	for _, c := range conds {
		fmt.Fprintf(h, "|%s|%s|%d|", c.name, c.kind, len(c.clips))
		for _, cl := range c.clips {
			fmt.Fprintf(h, "%d,%d;", cl.start, cl.phraseAt)
		}
		h.Write(audiotest.SamplesToBytes(c.pcm))
	}
}

// TestTheTrainedHeadsCacheKeyIsItsTrainingMaterial: the trained head is
// cached by what it learns from, so material that differs in a sample, a
// clip's place or a condition trains a head of its own. Found by a run:
// the key named each switch's material by hand, AGENTHOST_WAKESET_HEAD_SYNTH_NEAR
// was not among them, and a run with 150 near misses measured the head
// trained with 600.
func TestTheTrainedHeadsCacheKeyIsItsTrainingMaterial(t *testing.T) {
	conds := func(change func(c []*condition)) string {
		c := []*condition{
			{name: "clean", kind: "positive", pcm: []int16{1, 2, 3}, clips: []placed{{start: 1, phraseAt: 2}}},
			{name: "near misses", kind: "confusable", pcm: []int16{4, 5}},
		}
		if change != nil {
			change(c)
		}
		h := sha256.New()
		writeConditions(h, c)
		return hex.EncodeToString(h.Sum(nil))
	}
	same := conds(nil)
	if conds(nil) != same {
		t.Fatal("the same material gave two keys")
	}
	for what, change := range map[string]func(c []*condition){
		"a sample":       func(c []*condition) { c[1].pcm = []int16{4, 6} },
		"a clip's place": func(c []*condition) { c[0].clips[0].phraseAt = 3 },
		"a kind":         func(c []*condition) { c[1].kind = "negative" },
		"more audio":     func(c []*condition) { c[1].pcm = append(c[1].pcm, 0) },
	} {
		if conds(change) == same {
			t.Errorf("material that differs in %s gave the same key", what)
		}
	}
}
