package main

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkHostCall measures an MCP call round trip from the simulator through
// the real host binary to the built-in get_current_time and back, over
// loopback, and the host's resident memory idle and under 200 concurrent calls.
//
//	go test -run='^$' -bench=HostCall -benchtime=3000x ./cmd/agenthost/
func BenchmarkHostCall(b *testing.B) {
	sim, err := voicetest.NewServer(voicetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	d := startHost(b, sim, "log.level=warn")
	ctx := context.Background()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := sim.WaitFor(wctx, func() bool { return len(sim.Registers()) == 1 }); err != nil {
		b.Fatal(err)
	}
	params := json.RawMessage(`{"format":"simple"}`)
	for range 200 { // warm up
		sim.Call(ctx, "get_current_time", params)
	}
	time.Sleep(200 * time.Millisecond)
	idle := rssMB(b, d.cmd.Process.Pid)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		out, err := sim.Call(ctx, "get_current_time", params)
		if err != nil || !out.Success {
			b.Fatalf("%+v %v", out, err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(idle, "idle-RSS-MB")

	peak := 0.0
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				peak = max(peak, rssMB(b, d.cmd.Process.Pid))
			}
		}
	}()
	for range 5 {
		for range 200 {
			wg.Add(1)
			go func() { defer wg.Done(); sim.Call(ctx, "get_current_time", params) }()
		}
		wg.Wait()
	}
	close(stop)
	b.ReportMetric(max(peak, rssMB(b, d.cmd.Process.Pid)), "200-concurrent-RSS-MB")
}

func rssMB(b *testing.B, pid int) float64 {
	rss, _ := memOf(b, pid)
	return rss
}
