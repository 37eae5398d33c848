package voicetest

import (
	"encoding/binary"
	"math"
	"time"
)

type vadEvent int

const (
	vadNone vadEvent = iota
	vadSpeechStart
	vadSpeechEnd
)

// energyVAD is the simulator's end-of-speech detector: RMS per 20 ms window
// against a threshold, with the hang time counted in samples, not wall time.
type energyVAD struct {
	threshold float64
	hang      int // samples of silence that end speech
	inSpeech  bool
	silence   int
	window    []int16
}

const vadWindow = 320 // 20 ms at 16 kHz

func newEnergyVAD(threshold float64, hang time.Duration) *energyVAD {
	return &energyVAD{threshold: threshold, hang: int(hang.Seconds() * 16000)}
}

// feed takes 16 kHz s16le PCM and reports a speech start or end, at most one per call.
func (v *energyVAD) feed(pcm []byte) vadEvent {
	ev := vadNone
	for i := 0; i+1 < len(pcm); i += 2 {
		v.window = append(v.window, int16(binary.LittleEndian.Uint16(pcm[i:])))
		if len(v.window) < vadWindow {
			continue
		}
		var sum float64
		for _, s := range v.window {
			sum += float64(s) * float64(s)
		}
		loud := math.Sqrt(sum/vadWindow) >= v.threshold
		v.window = v.window[:0]
		switch {
		case loud && !v.inSpeech:
			v.inSpeech, v.silence = true, 0
			if ev == vadNone {
				ev = vadSpeechStart
			}
		case loud:
			v.silence = 0
		case v.inSpeech:
			v.silence += vadWindow
			if v.silence >= v.hang {
				v.inSpeech = false
				return vadSpeechEnd
			}
		}
	}
	return ev
}
