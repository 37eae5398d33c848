package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/proto/voice"
)

// result is what the run saw and what the end makes of it.
type result struct {
	start, end     snapshot
	startOK, endOK bool
	interrupted    bool
	pids           []procs.Proc // plugin processes when the load ended
	voice          struct {
		starts, stops, ends, audio int
		maxGap                     time.Duration
	}

	// From the simulator's record of every frame.
	sent, answered, lost, twice, droppedWithLink, elsewhere, strays int
	conns, deliberate, atShutdown                                   int
	unexplainedDisconnects                                          []string
	orphans                                                         []procs.Proc
	logLevels                                                       map[string]map[string]int // level -> msg -> count
	failures                                                        []string
}

func (r *result) failf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// reconcile matches every call the simulator sent with the results it got,
// checks every disconnect against the deliberate drops, looks for processes
// left from the plugin folder and reads the host's log.
func (r *result) reconcile(s *soak) {
	r.orphans = s.orphans(5 * time.Second)

	// Which connections ended by a deliberate drop.
	s.mu.Lock()
	drops, stopping := slices.Clone(s.drops), s.stopping
	s.mu.Unlock()
	s.mon.mu.Lock()
	disc := slices.Clone(s.mon.disconnects)
	r.conns = s.mon.connects
	s.mon.mu.Unlock()
	dropped := map[int]bool{}
	for _, d := range disc {
		switch {
		case slices.ContainsFunc(drops, func(t time.Time) bool { return !d.at.Before(t) && d.at.Sub(t) < 2*time.Second }):
			dropped[int(d.conn)] = true
			r.deliberate++
		case !stopping.IsZero() && !d.at.Before(stopping):
			r.atShutdown++
		default:
			r.unexplainedDisconnects = append(r.unexplainedDisconnects,
				fmt.Sprintf("connection %d closed at %s: %s", d.conn, d.at.Sub(s.started).Round(time.Millisecond), d.reason))
		}
	}

	callConn := map[string]int{}
	var order []string
	for _, f := range s.sim.Sent() {
		if f.Frame.Type != voice.TypeMCP {
			continue
		}
		if c, ok := parseMCP[voice.Call](f.Frame.Payload); ok {
			callConn[c.CallID] = f.Conn
			order = append(order, c.CallID)
		}
	}
	results := map[string][]int{}
	for _, f := range s.sim.Received() {
		if f.Frame.Type != voice.TypeMCP {
			continue
		}
		if res, ok := parseMCP[voice.Result](f.Frame.Payload); ok {
			results[res.CallID] = append(results[res.CallID], f.Conn)
		}
	}
	r.sent = len(order)
	for _, id := range order {
		got := results[id]
		switch {
		case len(got) == 0 && dropped[callConn[id]]:
			r.droppedWithLink++
		case len(got) == 0:
			r.lost++
		case len(got) > 1:
			r.twice++
		default:
			r.answered++
			if got[0] != callConn[id] {
				r.elsewhere++
			}
		}
	}
	for id := range results {
		if _, ok := callConn[id]; !ok {
			r.strays++
		}
	}
	r.readLog(s.hostLog)
	r.judge(s)
}

func parseMCP[T voice.Call | voice.Result](payload []byte) (*T, bool) {
	v, err := voice.ParseMCP(payload)
	if err != nil {
		return nil, false
	}
	t, ok := v.(*T)
	return t, ok
}

var (
	levelRe = regexp.MustCompile(`\blevel=(WARN|ERROR)\b`)
	msgRe   = regexp.MustCompile(`\bmsg=("(?:[^"\\]|\\.)*"|\S+)`)
)

// readLog counts the host's WARN and ERROR lines by message and fails the
// run on a panic or a fatal runtime error.
func (r *result) readLog(path string) {
	r.logLevels = map[string]map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		r.failf("cannot read the host's log: %v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.Contains(line, "WARNING: DATA RACE") {
			r.failf("the host's log shows %q (%s)", line, path)
		}
		if m := levelRe.FindStringSubmatch(line); m != nil {
			msg := "?"
			if mm := msgRe.FindStringSubmatch(line); mm != nil {
				msg = strings.Trim(mm[1], `"`)
			}
			if r.logLevels[m[1]] == nil {
				r.logLevels[m[1]] = map[string]int{}
			}
			r.logLevels[m[1]][msg]++
		}
	}
}

func (r *result) judge(s *soak) {
	s.mu.Lock()
	a := s.acct
	reloads := slices.Clone(s.reloads)
	hostErr := s.err
	s.mu.Unlock()
	if r.lost > 0 || a.class[noAnswer] > 0 {
		r.failf("%d calls lost (no result, and no deliberate drop of their connection); %d timed out at the load with no drop in flight", r.lost, a.class[noAnswer])
	}
	if r.twice > 0 {
		r.failf("%d calls answered twice", r.twice)
	}
	if r.strays > 0 {
		r.failf("%d results for calls the simulator never sent", r.strays)
	}
	if n := a.class[failedCall]; n > 0 {
		r.failf("%d calls failed or answered wrongly with no drop in flight", n)
	}
	if n := a.class[notSentAlone]; n > 0 {
		r.failf("%d calls found no connection with no drop in the 10 s before", n)
	}
	if len(r.unexplainedDisconnects) > 0 {
		r.failf("the link went down without a deliberate drop: %s", strings.Join(r.unexplainedDisconnects, "; "))
	}
	notApplied := 0
	for _, rl := range reloads {
		if !rl.applied {
			notApplied++
		}
	}
	if notApplied > 0 {
		r.failf("%d of %d reloads did not show the new sha256 in GET /v1/plugins within %s", notApplied, len(reloads), reloadApply)
	}
	if r.interrupted {
		return // the figures below need a whole run
	}
	if r.voice.ends == 0 {
		r.failf("no voice turn was answered")
	}
	if r.voice.maxGap > maxTurnGap {
		r.failf("the conversation stalled: %s without a new turn (bound %s)", r.voice.maxGap.Round(time.Millisecond), maxTurnGap)
	}
	if !r.startOK || !r.endOK {
		r.failf("the host's figures could not be read at the start or the end (GET /v1/status)")
	} else {
		if g := r.end.rss - r.start.rss; g > maxRSSGrowth {
			r.failf("the host's RSS grew by %s (bound %s)", mb(g), mb(maxRSSGrowth))
		}
		if g := r.end.heapGoal - r.start.heapGoal; g > maxHeapGrowth {
			r.failf("the host's heap goal grew by %s (bound %s)", mb(g), mb(maxHeapGrowth))
		}
		if g := r.end.goroutines - r.start.goroutines; g > maxGoroutineGrowth {
			r.failf("the host's goroutines grew by %d (bound %d)", g, maxGoroutineGrowth)
		}
		if g := r.end.fds - r.start.fds; g > maxFDGrowth {
			r.failf("the host's open descriptors grew by %d (bound %d)", g, maxFDGrowth)
		}
		if r.end.children > maxPluginProcs {
			r.failf("%d plugin processes at the end (bound %d)", r.end.children, maxPluginProcs)
		}
	}
	if hostErr != nil {
		r.failf("the host's exit after SIGTERM: %v", hostErr)
	}
	if len(r.orphans) > 0 {
		var l []string
		for _, p := range r.orphans {
			l = append(l, fmt.Sprintf("pid %d %s", p.PID, p.Exe))
		}
		r.failf("processes of the plugin folder outlived the host (killed now): %s", strings.Join(l, ", "))
	}
}

func (r *result) print(s *soak) {
	s.mu.Lock()
	a := s.acct
	lat := slices.Clone(a.latency)
	reloads := slices.Clone(s.reloads)
	reconn := slices.Clone(s.reconnect)
	drops := len(s.drops)
	s.mu.Unlock()
	slices.Sort(lat)
	var applied []time.Duration
	for _, rl := range reloads {
		if rl.applied {
			applied = append(applied, rl.took)
		}
	}
	slices.Sort(applied)
	slices.Sort(reconn)

	fmt.Printf("\n== soak figures (%s at %g calls/s)\n", s.o.duration, s.o.rate)
	fmt.Printf("calls:   attempted %d, sent %d, answered %d (ok %d), failed %d, lost %d, answered twice %d\n",
		a.attempted, r.sent, r.answered, a.class[okCall], a.class[failedCall], r.lost+a.class[noAnswer], r.twice)
	fmt.Printf("         dropped with the link %d (no answer %d, failed %d); not sent, no link after a drop %d; answered on a later connection %d; unexplained no-link %d\n",
		r.droppedWithLink, a.class[noAnswerDrop], a.class[failedAtDrop], a.class[notSent], r.elsewhere, a.class[notSentAlone])
	fmt.Printf("         skipped, this program was late for them %d; failed or no answer while this program stood still %d\n",
		a.skipped, a.class[atStall])
	fmt.Printf("latency: p50 %s, p99 %s, max %s (%d successful calls)\n", pct(lat, 50), pct(lat, 99), pct(lat, 100), len(lat))
	var names []string
	for n := range a.perService {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := a.perService[n]
		fmt.Printf("         %-25s ok %d, failed %d, no answer %d, dropped/not sent %d\n", n, c[okCall], c[failedCall],
			c[noAnswer], c[noAnswerDrop]+c[failedAtDrop]+c[notSent]+c[notSentAlone]+c[atStall])
	}
	fmt.Printf("reloads: %d (applied %d; rename to new sha256 in GET /v1/plugins: median %s, max %s); registers at the simulator %d\n",
		len(reloads), len(applied), pct(applied, 50), pct(applied, 100), len(s.sim.Registers()))
	fmt.Printf("drops:   %d (re-authenticated after median %s, max %s); connections %d: %d dropped deliberately, %d closed at shutdown\n",
		drops, pct(reconn, 50), pct(reconn, 100), r.conns, r.deliberate, r.atShutdown)
	fmt.Printf("voice:   mode vad; turns started %d, ended by the simulator's VAD %d, replies streamed %d, microphone frames %d; longest time without a new turn %s\n",
		r.voice.starts, r.voice.stops, r.voice.ends, r.voice.audio, r.voice.maxGap.Round(time.Millisecond))
	st := s.heart.report()
	fmt.Printf("driver:  stood still %d times for over %s (longest %s%s); heap %s at the end\n", st.n, stallMin, st.longest.Round(time.Millisecond), st.when, mb(st.heap))
	if len(r.pids) > 0 {
		var l []string
		for _, p := range r.pids {
			l = append(l, fmt.Sprintf("%d", p.PID))
		}
		fmt.Printf("plugin processes when the load ended: %s\n", strings.Join(l, " "))
	}
	row := func(name string, start, end, bound string) {
		if !r.startOK && name != "" {
			start = "-"
		}
		if !r.endOK && name != "" {
			end = "-"
		}
		fmt.Printf("  %-22s %12s %12s   %s\n", name, start, end, bound)
	}
	fmt.Printf("host:    pid %d\n", s.host.Process.Pid)
	row("", fmt.Sprintf("start@%s", r.start.at.Round(time.Second)), fmt.Sprintf("end@%s", r.end.at.Round(time.Second)), "bound")
	row("rss", mb(r.start.rss), mb(r.end.rss), "growth ≤ "+mb(maxRSSGrowth))
	row("heap goal (next GC)", mb(r.start.heapGoal), mb(r.end.heapGoal), "growth ≤ "+mb(maxHeapGrowth))
	row("heap objects", fmt.Sprint(r.start.heapObjs), fmt.Sprint(r.end.heapObjs), "")
	row("open fds", fmt.Sprint(r.start.fds), fmt.Sprint(r.end.fds), fmt.Sprintf("growth ≤ %d", maxFDGrowth))
	row("goroutines", fmt.Sprint(r.start.goroutines), fmt.Sprint(r.end.goroutines), fmt.Sprintf("growth ≤ %d", maxGoroutineGrowth))
	row("plugin processes", fmt.Sprint(r.start.children), fmt.Sprint(r.end.children), fmt.Sprintf("≤ %d", maxPluginProcs))
	row("plugin processes rss", mb(r.start.childRSS), mb(r.end.childRSS), "")
	s.mu.Lock()
	samples := slices.Clone(s.samples)
	s.mu.Unlock()
	if len(samples) > 0 {
		lo, hi := samples[0], samples[0]
		for _, x := range samples {
			lo.rss, hi.rss = min(lo.rss, x.rss), max(hi.rss, x.rss)
			lo.heapGoal, hi.heapGoal = min(lo.heapGoal, x.heapGoal), max(hi.heapGoal, x.heapGoal)
			lo.fds, hi.fds = min(lo.fds, x.fds), max(hi.fds, x.fds)
			lo.goroutines, hi.goroutines = min(lo.goroutines, x.goroutines), max(hi.goroutines, x.goroutines)
		}
		fmt.Printf("  over %d readings: rss %s–%s, heap goal %s–%s, fds %d–%d, goroutines %d–%d\n", len(samples), mb(lo.rss), mb(hi.rss),
			mb(lo.heapGoal), mb(hi.heapGoal), lo.fds, hi.fds, lo.goroutines, hi.goroutines)
	}
	fmt.Printf("orphans after the host stopped: %d\n", len(r.orphans))
	for _, lvl := range []string{"ERROR", "WARN"} {
		var msgs []string
		for m, n := range r.logLevels[lvl] {
			msgs = append(msgs, fmt.Sprintf("%d× %s", n, m))
		}
		sort.Strings(msgs)
		if len(msgs) > 0 {
			fmt.Printf("host log %s lines: %s\n", lvl, strings.Join(msgs, "; "))
		}
	}
	for _, e := range a.examples {
		fmt.Printf("example: %s\n", e)
	}
	if len(r.failures) == 0 {
		fmt.Println("soak: PASS")
		return
	}
	fmt.Println("soak: FAIL")
	for _, f := range r.failures {
		fmt.Println("  -", f)
	}
	fmt.Printf("  the host's log: %s\n", s.hostLog)
}

// pct returns the p-th percentile of sorted durations.
func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	i := (len(d)*p + 99) / 100
	i = min(max(i-1, 0), len(d)-1)
	return d[i].Round(time.Microsecond).String()
}
