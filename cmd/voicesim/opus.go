package main

import (
	"github.com/agenthost/agenthost/audio/opus"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// opusCodec gives the simulator libopus for sessions that ask for Opus
// (60 ms frames at 16 kHz, each packet with a 2-byte big-endian length).
func opusCodec() voicetest.OpusCodec {
	enc, err1 := opus.NewEncoder(opus.EncoderOptions{})
	dec, err2 := opus.NewDecoder(opus.DecoderOptions{})
	if err1 != nil || err2 != nil {
		return nil // opus sessions then get PCM, with a warning in the log
	}
	return codec{enc, dec}
}

type codec struct {
	enc *opus.Encoder
	dec *opus.Decoder
}

func (c codec) EncodeFrame(pcm []int16) ([]byte, error) {
	return c.enc.AppendEncodeFramed(nil, pcm, opus.BigEndian)
}

func (c codec) DecodeFrame(p []byte) ([]int16, error) { return c.dec.AppendDecodePayload(nil, p) }
