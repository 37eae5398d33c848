// Command soak is the endurance harness behind scripts/soak.sh. It runs the
// real host binary against the in-process voice simulator, with the bundled
// plugins (clock, files, sysinfo) in a plugin folder of its own, for a given
// time: calls at a steady rate spread over every service (the built-in one
// too, under a prefix), the clock plugin replaced by rename every 10 s
// (alternating two binaries that differ in their sha256), the link dropped
// every minute, and voice turns in VAD mode through the file audio backend.
// It prints what it saw and exits 1 on a lost, duplicated or unexplained
// failed call, a reload not applied, a stalled conversation, an unexplained
// disconnect, a panic in the host's log, a plugin process left after the host
// stopped, or growth of the host beyond the bounds below.
//
// It is a test tool, not part of the product: build it with
// `go build ./test/soak` (scripts/soak.sh does).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// The bounds a healthy host meets with margin (see scripts/soak.sh for the
// figures they were chosen from). Growth is the end figure (median of five
// samples under load) minus the start figure (the same, after warm-up).
const (
	// maxRSSGrowth: the host settles at about 20 MB under this load; a leak
	// of 1 KiB per call grows it by 23 MB in ten minutes at 40 calls/s.
	maxRSSGrowth = 16 << 20
	// maxHeapGrowth: the heap goal (the host's GOGC=200: 3 × the live heap
	// after the last GC) is a steadier sign of a leak than RSS, which the
	// runtime returns to the system slowly. A collection comes every ~20 s
	// under this load, so the start and the end figure each read one
	// cycle's goal: minute-long soaks without a leak read up to 5.3 MB of
	// growth. 8 MB is 2.7 MB of live heap: a minute catches a leak of
	// ~1.6 KiB per call, an hour one of a few dozen bytes.
	maxHeapGrowth = 8 << 20
	// maxGoroutineGrowth: a few goroutines come and go with calls in flight,
	// a turn and a reload; one leaked per call or per reload exceeds it
	// within minutes (60 reloads, 24,000 calls in ten minutes).
	maxGoroutineGrowth = 25
	// maxFDGrowth: one leaked descriptor per reload (60 in ten minutes) or
	// per drop (10) exceeds it.
	maxFDGrowth = 8
	// maxPluginProcs: the three plugins, and an old clock still stopping
	// after a reload.
	maxPluginProcs = 4
	// maxTurnGap: the longest time without a new turn (LISTEN start); a turn
	// takes about 2 s here, a reconnect well under 1 s.
	maxTurnGap = 20 * time.Second
	// reloadApply: how long a renamed binary may take to show in
	// `agenthost plugins` (GET /v1/plugins) with its new sha256. Generous:
	// the speed of a reload is the reload benchmark's business; this
	// catches one never applied, also on a machine that stalls for seconds.
	reloadApply = 15 * time.Second
)

type options struct {
	duration, warmup       time.Duration
	rate                   float64
	reloadEvery, dropEvery time.Duration
	callTimeout            time.Duration
	hostBin, pluginBins    string
	work                   string
	progressEvery          time.Duration
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long calls run (warm-up included)")
	flag.Float64Var(&o.rate, "rate", 40, "calls per second")
	flag.DurationVar(&o.warmup, "warmup", 0, "warm-up before the start figures (default: a quarter of the duration, at most 20s)")
	flag.DurationVar(&o.reloadEvery, "reload-every", 10*time.Second, "replace the clock plugin by rename this often")
	flag.DurationVar(&o.dropEvery, "drop-every", time.Minute, "drop the link this often (the first at half the interval)")
	flag.DurationVar(&o.callTimeout, "call-timeout", 15*time.Second, "a call without a result after this long has no answer")
	flag.StringVar(&o.hostBin, "host", "", "the agenthost binary (required)")
	flag.StringVar(&o.pluginBins, "plugins", "", "a folder with the clock, files and sysinfo plugin binaries (required)")
	flag.StringVar(&o.work, "work", "", "an empty folder for the run's files (required)")
	flag.DurationVar(&o.progressEvery, "progress", 0, "print a progress line this often (default: a minute, or a quarter of a shorter run)")
	flag.Parse()
	if o.hostBin == "" || o.pluginBins == "" || o.work == "" || o.rate <= 0 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "usage: soak -host BIN -plugins DIR -work DIR [-duration 10m] [-rate 40]")
		flag.PrintDefaults()
		return 2
	}
	if o.warmup == 0 {
		o.warmup = min(o.duration/4, 20*time.Second)
	}
	if o.progressEvery == 0 {
		o.progressEvery = min(time.Minute, o.duration/4)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	fmt.Printf("soak: %s at %g calls/s; reload every %s, drop every %s; warm-up %s\n", o.duration, o.rate, o.reloadEvery, o.dropEvery, o.warmup)
	fmt.Printf("soak: reproduce with: %s\n", strings.Join(os.Args, " "))
	s, err := setup(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: setup:", err)
		if s != nil {
			s.shutdown()
		}
		return 2
	}
	r := s.run(ctx)
	s.shutdown()
	r.reconcile(s)
	r.print(s)
	switch {
	case r.interrupted:
		return 2
	case len(r.failures) > 0:
		return 1
	}
	return 0
}
