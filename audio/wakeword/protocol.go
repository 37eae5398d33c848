package wakeword

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The pipe protocol between the host and the detector process
// (cmd/agenthost-wakeword).
//
// Host → detector (its stdin): chunks of audio, each a 12-byte header — the
// stream position of the chunk's first sample (int64, little-endian) and the
// number of samples (uint32, little-endian, at most MaxChunk; its top two
// bits are the Heard flags: bit 31 set when the speaker was sounding as the
// chunk was heard, bit 30 when the echo canceller took all of it for the
// speaker's own sound alone) — then the samples, 16 kHz mono s16le. Longer
// audio is sent as several chunks. A position that does not follow on from the
// last chunk is a gap: the detector starts the stream again there. A header
// with position -1 and no samples is a ping, answered with a pong once all
// audio sent before it is processed. End of input ends the detector.
//
// Detector → host (its stdout): one JSON Message per line, and nothing
// else (the detector points its own file descriptor 1 at stderr, so that
// no library can print onto the protocol). The first line is "ready" or
// "error".

// MaxChunk bounds the samples of one chunk (1 s).
const MaxChunk = Rate

// MaxLine bounds one message line.
const MaxLine = 4096

const headerSize = 12

// The Heard flags in a chunk header's count.
const (
	soundingBit = 1 << 31
	ownSoundBit = 1 << 30
	heardBits   = soundingBit | ownSoundBit
)

// Heard is how a chunk was heard.
type Heard struct {
	// Sounding: the speaker itself sounded (its replies, earcons, rings,
	// music): the models' points while sounding apply.
	Sounding bool
	// OwnSound: the echo canceller took every frame of the chunk for the
	// speaker's own sound alone, no voice in the room (capture.Frame's
	// OwnSound). False when there is no canceller to tell.
	OwnSound bool
}

// Message kinds.
const (
	KindReady = "ready"
	KindError = "error"
	KindWake  = "wake"
	KindPong  = "pong"
	// KindEnrolled is the one line of an enrollment (--enroll).
	KindEnrolled = "enrolled"
)

// Message is one line from the detector.
type Message struct {
	Type string `json:"type"`
	// ready: the library's version and the models loaded (their names).
	ONNXRuntime string   `json:"onnxruntime,omitempty"`
	Library     string   `json:"library,omitempty"`
	Models      []string `json:"models,omitempty"`
	// ready: the models whose owner's verifier was loaded, and why a
	// verifier file that is there was not.
	Verified      []string `json:"verified,omitempty"`
	VerifierError string   `json:"verifier_error,omitempty"`
	// enrolled: the verifier written (Model, Path) and what it was
	// trained on.
	Path      string `json:"path,omitempty"`
	Phrases   int    `json:"phrases,omitempty"`
	Negatives int    `json:"negatives,omitempty"`
	// error: why the detector cannot run.
	Error string `json:"error,omitempty"`
	// wake: which model fired, its score, and the stream position just
	// after the audio it had heard.
	Model string  `json:"model,omitempty"`
	Score float32 `json:"score,omitempty"`
	End   int64   `json:"end,omitempty"`
	// pong: the position after the last sample processed.
	Pos int64 `json:"pos,omitempty"`
}

// WriteChunk writes audio at pos: as one chunk, or as several of at most
// MaxChunk samples each when pcm is longer (an audio.frame over 1 s).
func WriteChunk(w io.Writer, pos int64, pcm []int16, heard Heard, buf []byte) ([]byte, error) {
	for {
		n := min(len(pcm), MaxChunk)
		buf = append(buf[:0], make([]byte, headerSize+2*n)...)
		binary.LittleEndian.PutUint64(buf, uint64(pos))
		count := uint32(n)
		if heard.Sounding {
			count |= soundingBit
		}
		if heard.OwnSound {
			count |= ownSoundBit
		}
		binary.LittleEndian.PutUint32(buf[8:], count)
		for i, s := range pcm[:n] {
			binary.LittleEndian.PutUint16(buf[headerSize+2*i:], uint16(s))
		}
		if _, err := w.Write(buf); err != nil {
			return buf, err
		}
		pos, pcm = pos+int64(n), pcm[n:]
		if len(pcm) == 0 {
			return buf, nil
		}
	}
}

// WritePing asks for a pong.
func WritePing(w io.Writer) error {
	var h [headerSize]byte
	binary.LittleEndian.PutUint64(h[:], ^uint64(0))
	_, err := w.Write(h[:])
	return err
}

// ErrPing is what ReadChunk returns for a ping.
var ErrPing = errors.New("ping")

// ReadChunk reads one chunk into pcm (grown as needed). It returns ErrPing
// for a ping, io.EOF at the end of input.
func ReadChunk(r io.Reader, pcm []int16, buf []byte) (pos int64, _ []int16, _ Heard, _ []byte, _ error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("wakeword: input ended inside a chunk header")
		}
		return 0, pcm, Heard{}, buf, err
	}
	pos = int64(binary.LittleEndian.Uint64(h[:]))
	n := binary.LittleEndian.Uint32(h[8:])
	if pos == -1 && n == 0 {
		return pos, pcm[:0], Heard{}, buf, ErrPing
	}
	heard := Heard{Sounding: n&soundingBit != 0, OwnSound: n&ownSoundBit != 0}
	n &^= heardBits
	if pos < 0 || n > MaxChunk {
		return 0, pcm, Heard{}, buf, fmt.Errorf("wakeword: bad chunk header (position %d, %d samples; at most %d)", pos, n, MaxChunk)
	}
	if cap(buf) < int(2*n) {
		buf = make([]byte, 2*n)
	}
	buf = buf[:2*n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, pcm, Heard{}, buf, fmt.Errorf("wakeword: input ended inside a chunk: %w", err)
	}
	pcm = pcm[:0]
	for i := 0; i < int(n); i++ {
		pcm = append(pcm, int16(binary.LittleEndian.Uint16(buf[2*i:])))
	}
	return pos, pcm, heard, buf, nil
}

// Encode is m as one line.
func (m Message) Encode() []byte {
	b, _ := json.Marshal(m)
	return append(b, '\n')
}
