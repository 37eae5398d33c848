package conversation

import (
	"sort"
	"testing"
	"time"
)

// BenchmarkPlaybackStart reports the time from the first reply frame reaching
// the conversation to the first sample written to the speaker, with reply
// frames arriving in real time (60 ms apart) and the default 120 ms lead.
//
//	go test -run='^$' -bench=PlaybackStart -benchtime=10x ./host/conversation/
func BenchmarkPlaybackStart(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		r := newRig(b, Options{Mode: "manual"})
		r.c.LinkUp()
		task, _, err := r.c.Say("hello")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for seq := 1; r.sink.count() == 0; seq++ {
			r.c.Frame(reply(task, seq, 60*time.Millisecond))
			deadline := time.Now().Add(60 * time.Millisecond)
			for r.sink.count() == 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Microsecond)
			}
		}
		lat = append(lat, time.Since(start))
		r.stop()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "first-frame→speaker-p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
}
