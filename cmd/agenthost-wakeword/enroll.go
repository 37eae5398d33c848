package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/internal/statefile"
)

// repeated is a flag given any number of times.
type repeated []string

func (f *repeated) String() string     { return strings.Join(*f, ",") }
func (f *repeated) Set(v string) error { *f = append(*f, v); return nil }

// maxRecording bounds one enrollment recording (30 s).
const maxRecording = 30 * wakeword.Rate

// enroll trains the verifier of the one model in models from the
// recordings and writes it into vdir.
func enroll(dir, lib, vdir string, phrases, others []string, models []string) (wakeword.Message, error) {
	if len(models) != 1 {
		return wakeword.Message{}, fmt.Errorf("--enroll trains one model's verifier; %d models given", len(models))
	}
	if len(phrases) < wakeword.MinPhrases || len(phrases) > wakeword.MaxPhrases {
		return wakeword.Message{}, fmt.Errorf("%d recordings of the phrase (--phrase); %d…%d are needed", len(phrases), wakeword.MinPhrases, wakeword.MaxPhrases)
	}
	if len(others) == 0 {
		return wakeword.Message{}, errors.New("no recording of other speech (--other): the verifier needs to hear what is not the phrase")
	}
	e := wakeword.Enrollment{Model: 0}
	read := func(paths []string) ([][]int16, error) {
		var out [][]int16
		for _, p := range paths {
			pcm, err := readRaw(p)
			if err != nil {
				return nil, fmt.Errorf("recording %s: %w", p, err)
			}
			out = append(out, pcm)
		}
		return out, nil
	}
	var err error
	if e.Phrases, err = read(phrases); err != nil {
		return wakeword.Message{}, err
	}
	if e.Others, err = read(others); err != nil {
		return wakeword.Message{}, err
	}
	// The recordings are root's when root runs it: read above, before
	// becoming the owner of the folders below.
	who, err := asOwner(dir, lib, models, vdir)
	if err != nil {
		return wakeword.Message{}, err
	}
	rt, names, _, _, err := open(dir, lib, models)
	if err != nil {
		return wakeword.Message{}, asWho(err, who)
	}
	defer rt.Close()
	e.Name = names[0]
	v, err := wakeword.Enroll(rt, e)
	if err != nil {
		return wakeword.Message{}, err
	}
	path := wakeword.VerifierFile(vdir, e.Name)
	if err := statefile.Write(path, v); err != nil {
		return wakeword.Message{}, asWho(err, who)
	}
	return wakeword.Message{Type: wakeword.KindEnrolled, Model: e.Name, Path: path, Phrases: v.Phrases, Negatives: v.Negatives}, nil
}

// readRaw reads a recording of raw 16 kHz mono s16le, at most
// maxRecording samples.
func readRaw(path string) ([]int16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 2*maxRecording+1))
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || len(b) > 2*maxRecording || len(b)%2 != 0 {
		return nil, fmt.Errorf("%d bytes: 1…%d samples of raw 16 kHz mono s16le (30 s) are taken", len(b), maxRecording)
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm, nil
}
