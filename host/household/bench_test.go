package household

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// BenchmarkHouseholdIdle: N speakers on loopback keep their membership
// (SWIM probes every second, a full state exchange every 30 s scaled by
// N) and then settle one phrase that all of them heard; it prints what
// each speaker sends per second while idle, the share of a core it takes,
// and the bytes one phrase costs the household.
//
//	go test -run '^$' -bench HouseholdIdle -benchtime 1x ./host/household/
//
// AGENTHOST_HOUSEHOLD_IDLE sets how long each size is watched (60s).
func BenchmarkHouseholdIdle(b *testing.B) {
	watch := time.Minute
	if d, err := time.ParseDuration(os.Getenv("AGENTHOST_HOUSEHOLD_IDLE")); err == nil {
		watch = d
	}
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("bench")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	metrics.NewGlobal(cfg, sink)
	for b.Loop() {
		for _, n := range []int{3, 10, 50} {
			key, _ := NewKey()
			var hs []*Household
			for i := range n {
				var peers []string
				if i > 0 {
					peers = []string{hs[0].Addr()}
				}
				h, err := Start(Options{Key: key, Name: fmt.Sprintf("s%02d", i), Room: "r", Bind: "127.0.0.1", Window: 150 * time.Millisecond, Peers: peers})
				if err != nil {
					b.Fatal(err)
				}
				hs = append(hs, h)
			}
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
				full := true
				for _, h := range hs {
					full = full && len(h.Members()) == n
				}
				if full {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%d speakers did not all see each other in two minutes", n)
				}
			}
			time.Sleep(5 * time.Second) // the joins' gossip settles
			sent0, cpu0 := sent(sink), cpuTime()
			time.Sleep(watch)
			sentIdle, cpuIdle := sent(sink)-sent0, cpuTime()-cpu0
			before := sent(sink)
			hs[0].Decide(Claim{Score: 0.9, SNR: 20})
			time.Sleep(time.Second)
			phrase := sent(sink) - before
			b.Logf("%2d speakers: idle, each sends %6.0f B/s and takes %.3f%% of a core (watched %s); one phrase costs the household %d B (claims and the answer), of which the gossip of that second is part",
				n, sentIdle/watch.Seconds()/float64(n), 100*cpuIdle.Seconds()/watch.Seconds()/float64(n), watch, int(phrase))
			for _, h := range hs {
				h.Close()
			}
		}
	}
}

// sent is what memberlist counted as sent, UDP and TCP, in bytes.
func sent(s *metrics.InmemSink) float64 {
	var total float64
	for _, iv := range s.Data() {
		iv.RLock()
		for name, c := range iv.Counters {
			if strings.HasPrefix(name, "bench.memberlist.udp.sent") || strings.HasPrefix(name, "bench.memberlist.tcp.sent") {
				total += c.Sum
			}
		}
		iv.RUnlock()
	}
	return total
}

// cpuTime is the process's CPU time, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
