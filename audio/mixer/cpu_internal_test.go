package mixer

import (
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio"
)

// BenchmarkMixASecond: the work of mixing one second (ns/op) of a 16 kHz
// voice, 44.1 kHz stereo media (ducked: the assistant is active) and a
// 16 kHz earcon, each converted to the output's format and summed, without
// Run's goroutines and device (whose wake-ups BenchmarkMixCPU counts too):
// out at 16 kHz mono (the output before issue 25) and at 48 kHz stereo (a
// sound card's now).
func BenchmarkMixASecond(b *testing.B) {
	for _, out := range []audio.Format{{Rate: 16000, Channels: 1}, {Rate: 48000, Channels: 2}} {
		b.Run(fmt.Sprintf("out=%dHz×%d", out.Rate, out.Channels), func(b *testing.B) {
			m := New(NewSlotFormat(out), Options{Rate: out.Rate, Channels: out.Channels})
			m.SetActive(true)
			var streams []*Stream
			var blocks [][]int16
			for _, f := range []audio.Format{{Rate: 16000, Channels: 1}, {Rate: 44100, Channels: 2}, {Rate: 16000, Channels: 1}} {
				c := Voice
				if f.Channels == 2 {
					c = Media
				}
				s, err := m.Open("s", c, f)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Stop()
				block := make([]int16, f.Rate*f.Channels/50) // 20 ms
				for i := range block {
					block[i] = int16(i * 37)
				}
				streams, blocks = append(streams, s), append(blocks, block)
			}
			b.ResetTimer()
			for range b.N {
				for range time.Second / m.o.Frame {
					for i, s := range streams {
						if _, err := s.Write(blocks[i]); err != nil {
							b.Fatal(err)
						}
					}
					m.mix()
					m.mix() // what a resampler gave beyond a frame
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e7, "%core")
		})
	}
}
