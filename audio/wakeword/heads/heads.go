// Package heads holds agenthost's own wake models: heads (wakeword.Head)
// trained here, in pure Go, on openWakeWord's frozen embeddings of speech
// made here with espeak-ng and sox (the wake set's tuning part,
// wakewordtest.Wakeset), so they are agenthost's own (its licence), unlike
// openWakeWord's pre-trained CC BY-NC-SA heads. They still need
// openWakeWord's melspectrogram and embedding models (fetched) to run.
//
// hey_jarvis_agenthost.bin is generated, never edited:
//
//	AGENTHOST_WAKESET_HEAD_OUT=$PWD/audio/wakeword/heads/hey_jarvis_agenthost.bin \
//	  go test ./audio/wakeword/ort/ -run '^$' -bench WakeSetOwnHead -benchtime 1x -timeout 3h
//
// which trains it on the tuning part (deterministic: the same file on
// every run with the same espeak-ng, sox and ONNX Runtime; this one with
// the fetched ONNX Runtime 1.30.0) and prints its figures on the held-out
// part beside the pre-trained hey_jarvis. It is not the default model: on
// the held-out part it hears far more, but wakes on ordinary speech (see
// the README's wake set).
package heads

import (
	_ "embed"
	"fmt"
	"slices"

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
