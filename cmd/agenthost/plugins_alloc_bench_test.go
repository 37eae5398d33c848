package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkPluginCallAllocs counts what a plugin call costs the host
// process's heap (simulator → host → clock plugin, as BenchmarkPluginCall):
// allocations, bytes and GC cycles, read from the host's own /metrics
// (go_memstats_mallocs_total, go_memstats_alloc_bytes_total,
// go_gc_duration_seconds_count) before and after the calls, less what one
// scrape costs, and the reads and writes of the host and the plugin. Counts,
// not times: the figures hold on a busy machine. It runs the host at its own
// GOGC (host/calls sets it through internal/memtrim), at Go's default 100
// and at the plugins' 50, and reports beside the GC cycles what each costs
// in memory after the calls: the heap goal (go_memstats_next_gc_bytes) and
// the host's RSS.
//
//	go test -run='^$' -bench='^BenchmarkPluginCallAllocs$' -benchtime=3000x ./cmd/agenthost/
func BenchmarkPluginCallAllocs(b *testing.B) {
	for _, gogc := range []string{"host", "100", "50"} {
		b.Run("gogc="+gogc, func(b *testing.B) {
			var env []string
			if gogc != "host" {
				env = []string{"GOGC=" + gogc}
			}
			pluginCallAllocs(b, env)
		})
	}
}

func pluginCallAllocs(b *testing.B, env []string) {
	clock := bundled(b, "clock")
	sim, err := voicetest.NewServer(voicetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sim.Close() })
	dir := filepath.Join(b.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	copyExec(b, clock, filepath.Join(dir, "clock"))
	d := startHostEnv(b, sim, env, "plugins.dirs="+dir, "log.level=info", "services.builtins=false", "metrics.listen=127.0.0.1:0")
	url := regexp.MustCompile(`url=(http://\S+/metrics)`).FindStringSubmatch(d.logLine("metrics served"))[1]
	ctx := context.Background()
	params := json.RawMessage(`{"format":"simple"}`)
	for range 300 { // warm up
		sim.Call(ctx, "get_current_time", params)
	}
	hostPID, pluginPID := d.cmd.Process.Pid, d.pluginList()["clock"].PID
	if pluginPID == 0 {
		b.Fatalf("the clock plugin is not running: %+v", d.pluginList())
	}
	hio0, pio0 := syscalls(b, hostPID), syscalls(b, pluginPID)
	s0 := scrapeHeap(b, url)
	s1 := scrapeHeap(b, url) // s1-s0: what a scrape costs
	n := 0
	for b.Loop() {
		if out, err := sim.Call(ctx, "get_current_time", params); err != nil || !out.Success {
			b.Fatalf("%+v %v", out, err)
		}
		n++
	}
	b.StopTimer()
	hio, pio := syscalls(b, hostPID), syscalls(b, pluginPID)
	s2 := scrapeHeap(b, url)
	per := func(i int) float64 { return ((s2[i] - s1[i]) - (s1[i] - s0[i])) / float64(n) }
	b.ReportMetric(per(0), "host-allocs/call")
	b.ReportMetric(per(1), "host-B/call")
	b.ReportMetric(1000*(s2[2]-s1[2])/float64(n), "host-GCs/1000calls")
	b.ReportMetric(s2[3]/(1<<20), "host-heap-goal-MB")
	rss, _ := memOf(b, hostPID)
	b.ReportMetric(rss, "host-RSS-MB")
	// Reads and writes (the scrapes' few among them): frames and wake-ups.
	b.ReportMetric(float64(hio[0]-hio0[0])/float64(n), "host-reads/call")
	b.ReportMetric(float64(hio[1]-hio0[1])/float64(n), "host-writes/call")
	b.ReportMetric(float64(pio[0]-pio0[0])/float64(n), "plugin-reads/call")
	b.ReportMetric(float64(pio[1]-pio0[1])/float64(n), "plugin-writes/call")
	b.ReportMetric(0, "ns/op")
}

// syscalls returns a process's read and write system calls so far
// (syscr, syscw of /proc/PID/io).
func syscalls(b *testing.B, pid int) [2]int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		b.Fatal(err)
	}
	var out [2]int64
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "syscr":
			out[0], _ = strconv.ParseInt(v, 10, 64)
		case "syscw":
			out[1], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out
}

// heapMetrics are the /metrics series scrapeHeap reads, in its order.
var heapMetrics = []string{"go_memstats_mallocs_total", "go_memstats_alloc_bytes_total", "go_gc_duration_seconds_count", "go_memstats_next_gc_bytes"}

// scrapeHeap reads heapMetrics from a host's /metrics.
func scrapeHeap(b *testing.B, url string) []float64 {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := make([]float64, len(heapMetrics))
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		for i, m := range heapMetrics {
			if ok && name == m {
				if out[i], err = strconv.ParseFloat(value, 64); err != nil {
					b.Fatalf("%s: %v", sc.Text(), err)
				}
				found++
			}
		}
	}
	if found != len(heapMetrics) {
		b.Fatalf("/metrics has %d of %v", found, heapMetrics)
	}
	return out
}
