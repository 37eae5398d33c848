package main

import (
	"github.com/agenthost/agenthost/proto/voice/voicetest"
	"github.com/agenthost/agenthost/proto/voice/voicetest/simopus"
)

// opusCodec gives the simulator libopus for sessions that ask for Opus.
func opusCodec() voicetest.OpusCodec {
	c, err := simopus.New()
	if err != nil {
		return nil // opus sessions then get PCM, with a warning in the log
	}
	return c
}
