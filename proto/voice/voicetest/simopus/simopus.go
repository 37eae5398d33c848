// Package simopus gives the voice simulator (voicetest.Options.Opus) the
// libopus the host uses: 60 ms frames at 16 kHz, each packet with a 2-byte
// big-endian length, as the protocol documents for Opus input. It is apart
// from voicetest so that the simulator itself needs no cgo.
package simopus

import (
	"github.com/agenthost/agenthost/audio/opus"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// New returns a codec for voicetest.Options.Opus.
func New() (voicetest.OpusCodec, error) {
	enc, err := opus.NewEncoder(opus.EncoderOptions{})
	if err != nil {
		return nil, err
	}
	dec, err := opus.NewDecoder(opus.DecoderOptions{})
	if err != nil {
		return nil, err
	}
	return codec{enc, dec}, nil
}

type codec struct {
	enc *opus.Encoder
	dec *opus.Decoder
}

func (c codec) EncodeFrame(pcm []int16) ([]byte, error) {
	return c.enc.AppendEncodeFramed(nil, pcm, opus.BigEndian)
}

func (c codec) DecodeFrame(p []byte) ([]int16, error) { return c.dec.AppendDecodePayload(nil, p) }
