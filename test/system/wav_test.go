//go:build system

package system

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// wavData returns the samples of a WAV file's data chunk.
func wavData(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, fmt.Errorf("not a WAV file (%d bytes)", len(b))
	}
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:]))
		off += 8
		if id == "data" {
			if size == 0 || off+size > len(b) { // still being written
				size = len(b) - off
			}
			return b[off : off+size&^1], nil
		}
		off += size + size%2
	}
	return nil, fmt.Errorf("no data chunk")
}

// toneWAV is d of a sine at hz, 16 kHz mono s16 at amplitude amp, with 200 ms of silence either side.
func toneWAV(hz float64, d time.Duration, amp float64) []byte {
	const rate = 16000
	pad := rate / 5
	n := int(d.Seconds() * rate)
	pcm := make([]byte, 2*(n+2*pad))
	for i := range n {
		v := int16(amp * math.Sin(2*math.Pi*hz*float64(i)/rate))
		binary.LittleEndian.PutUint16(pcm[2*(pad+i):], uint16(v))
	}
	var w bytes.Buffer
	w.WriteString("RIFF")
	binary.Write(&w, binary.LittleEndian, uint32(36+len(pcm)))
	w.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(2 * rate), uint16(2), uint16(16)} {
		binary.Write(&w, binary.LittleEndian, v) // fmt: PCM, mono, 16 kHz, 16 bits
	}
	w.WriteString("data")
	binary.Write(&w, binary.LittleEndian, uint32(len(pcm)))
	w.Write(pcm)
	return w.Bytes()
}
