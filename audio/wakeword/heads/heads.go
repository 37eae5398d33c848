// Package heads holds agenthost's own wake models: heads (wakeword.Head)
// trained here, in pure Go, on openWakeWord's frozen embeddings of speech
// made here by voices whose licences let agenthost ship what it learns
// (espeak-ng's tuning part of wakewordtest.Wakeset; flite's kal, awb and
// rms, RHVoice's bdl and clb, Pico's en-US, each also shifted by sox to
// other speakers), so they are agenthost's own (its licence), unlike
// openWakeWord's pre-trained CC BY-NC-SA heads. They still need
// openWakeWord's melspectrogram and embedding models (fetched) to run.
//
// hey_jarvis_agenthost.bin is generated, never edited:
//
//	AGENTHOST_WAKESET_PART=other-synths AGENTHOST_WAKESET_HEAD_SYNTHS=kal,awb,rms,bdl,clb,en-US \
//	AGENTHOST_WAKESET_HEAD_WEIGHTING=per-example AGENTHOST_WAKESET_HEAD_HARD=0.05 AGENTHOST_WAKESET_HEAD_DECAY=1 \
//	AGENTHOST_WAKESET_HEAD_SLICE=off AGENTHOST_WAKESET_HEAD_SYNTH_HOURS=4 AGENTHOST_WAKESET_HEAD_SYNTH_PHRASES=600 \
//	AGENTHOST_WAKESET_HEAD_OUT=$PWD/audio/wakeword/heads/hey_jarvis_agenthost.bin \
//	  go test ./audio/wakeword/ort/ -run '^$' -bench 'WakeSetOwnHead$' -benchtime 1x -timeout 3h
//
// which trains it (seeded; this one with the fetched ONNX Runtime 1.30.0)
// and prints its figures on the 28 people of the other synthesizers it
// never heard, beside the pre-trained hey_jarvis. Its operating point is
// threshold 0.9, two scores in a row (Point), where the host runs it
// unless conversation.wake_word.per_model says otherwise, and 0.98 two in
// a row with a voice heard in the room while the speaker itself sounds
// (PointWhileSounding): at its own point it would wake on the speaker's
// own sound, cancelled, 60 times an hour; at that one it never did in an
// hour of it (docs/wake-word.md, "the own head over its own sound").
package heads

import (
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// HeyJarvis is agenthost's own "hey jarvis" model's name.
const HeyJarvis = "hey_jarvis_agenthost"

//go:embed hey_jarvis_agenthost.bin
var heyJarvis []byte

// Names are the models this package holds.
func Names() []string { return []string{HeyJarvis} }

// Is reports whether name is one of this package's models.
func Is(name string) bool { return slices.Contains(Names(), name) }

// Point is the operating point the model name was measured at (the
// figures in this package's doc), and whether it is one of this
// package's: where it is named, it runs there (or at the global point
// where that is stricter) unless the configuration's per_model says
// otherwise (at the global 0.5 it wakes about 16 times an hour on speech).
func Point(name string) (wakeword.Point, bool) {
	if name != HeyJarvis {
		return wakeword.Point{}, false
	}
	return wakeword.Point{Threshold: 0.9, Over: 2}, true
}

// PointWhileSounding is the point the model name runs at while the
// speaker itself sounds (its replies, earcons, music; cancelled), and
// whether it has one: for the own head 0.98 two in a row, with a voice the
// echo canceller heard in the room within half a second before (Point's
// Voice), the laxest point that never woke on the first half hour of its
// own sound (docs/wake-word.md, "the own head over its own sound").
func PointWhileSounding(name string) (wakeword.Point, bool) {
	if name != HeyJarvis {
		return wakeword.Point{}, false
	}
	return wakeword.Point{Threshold: 0.98, Over: 2, Voice: 500 * time.Millisecond}, true
}

// PointUnder is where the model name runs when nothing names a point of
// its own for it, under the global point: for one of this package's, its
// Point or the global one, field by field, whichever wakes less (a global
// point set stricter keeps holding it); else the global one. ok reports
// whether it is one of this package's.
func PointUnder(name string, global wakeword.Point) (p wakeword.Point, ok bool) {
	own, ok := Point(name)
	if !ok {
		return global, false
	}
	return wakeword.Point{Threshold: max(own.Threshold, global.Threshold), Over: max(own.Over, global.Over)}, true
}

// Load returns the head of the model name.
func Load(name string) (*wakeword.Head, error) {
	if name != HeyJarvis {
		return nil, fmt.Errorf("no own wake model %q (there is %v)", name, Names())
	}
	h, err := wakeword.ParseHead(heyJarvis)
	if err != nil {
		return nil, fmt.Errorf("the own model %s: %w", name, err)
	}
	return h, nil
}
