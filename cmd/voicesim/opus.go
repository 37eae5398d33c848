package main

import "github.com/agenthost/agenthost/proto/voice/voicetest"

// opusCodec is replaced once audio/opus exists; nil makes opus sessions use PCM.
func opusCodec() voicetest.OpusCodec { return nil }
