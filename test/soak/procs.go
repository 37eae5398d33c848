package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
)

// snapshot is one reading of the host and its plugin processes.
type snapshot struct {
	at         time.Duration // since the load began
	rss        int64         // the host's, from GET /v1/status
	fds        int
	goroutines int
	heapGoal   int64 // go_memstats_next_gc_bytes from /metrics: (1+GOGC/100)·live heap
	heapObjs   int64 // go_memstats_heap_objects
	children   int   // processes whose parent is the host
	childRSS   int64 // their resident memory together
}

type status struct {
	Connected bool `json:"connected"`
	Process   struct {
		PID        int   `json:"pid"`
		Goroutines int   `json:"goroutines"`
		RSSBytes   int64 `json:"rss_bytes"`
		OpenFDs    int   `json:"open_fds"`
	} `json:"process"`
}

func (s *soak) sample() (snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st status
	if err := s.ctl.Do(ctx, "GET /v1/status", nil, &st); err != nil {
		return snapshot{}, fmt.Errorf("GET /v1/status: %w", err)
	}
	snap := snapshot{at: time.Since(s.started), rss: st.Process.RSSBytes, fds: st.Process.OpenFDs, goroutines: st.Process.Goroutines}
	m, err := s.metrics(ctx)
	if err != nil {
		return snapshot{}, err
	}
	snap.heapGoal, snap.heapObjs = int64(m["go_memstats_next_gc_bytes"]), int64(m["go_memstats_heap_objects"])
	for _, p := range procs.All() {
		if p.PPID == s.host.Process.Pid {
			snap.children++
			if m, err := procs.Memory(p.PID); err == nil {
				snap.childRSS += m.RSS
			}
		}
	}
	return snap, nil
}

// figures takes five samples 0.5 s apart and returns their medians, so that
// a call, a turn or a reload in progress at one instant does not count.
func (s *soak) figures() (snapshot, bool) {
	var all []snapshot
	for i := range 5 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		if snap, err := s.sample(); err == nil {
			all = append(all, snap)
		} else {
			fmt.Fprintln(os.Stderr, "soak:", err)
		}
	}
	if len(all) == 0 {
		return snapshot{}, false
	}
	med := func(f func(snapshot) int64) int64 {
		v := make([]int64, len(all))
		for i, a := range all {
			v[i] = f(a)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	snap := snapshot{at: all[0].at,
		rss:        med(func(a snapshot) int64 { return a.rss }),
		fds:        int(med(func(a snapshot) int64 { return int64(a.fds) })),
		goroutines: int(med(func(a snapshot) int64 { return int64(a.goroutines) })),
		heapGoal:   med(func(a snapshot) int64 { return a.heapGoal }),
		heapObjs:   med(func(a snapshot) int64 { return a.heapObjs }),
		children:   int(med(func(a snapshot) int64 { return int64(a.children) })),
		childRSS:   med(func(a snapshot) int64 { return a.childRSS }),
	}
	s.mu.Lock()
	s.samples = append(s.samples, snap)
	s.mu.Unlock()
	return snap, true
}

// metrics reads the host's /metrics: the samples without labels.
func (s *soak) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			m[name] = v
		}
	}
	return m, sc.Err()
}

// orphans waits up to within for the plugin folder's processes to end and
// returns those that did not; it kills them, since they are this run's.
func (s *soak) orphans(within time.Duration) []procs.Proc {
	deadline := time.Now().Add(within)
	for {
		left := procs.In(s.pluginDir)
		if len(left) == 0 || time.Now().After(deadline) {
			for _, p := range left {
				if pr, err := os.FindProcess(p.PID); err == nil {
					pr.Kill()
				}
			}
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *soak) progress(label string, snap snapshot) {
	s.mu.Lock()
	a := s.acct
	reloads, drops := len(s.reloads), len(s.drops)
	s.mu.Unlock()
	starts, _, ends, _, _ := s.mon.turns(time.Now())
	stalls := s.heart.report().n
	if label != "" {
		label = " (" + label + ")"
	}
	fmt.Printf("t=%-7s calls %d ok %d; reloads %d drops %d; turns %d replies %d; stalls %d | host rss %s heap goal %s objects %d fds %d goroutines %d | plugins %d, rss %s%s\n",
		snap.at.Round(time.Second), a.attempted, a.class[okCall], reloads, drops, starts, ends, stalls,
		mb(snap.rss), mb(snap.heapGoal), snap.heapObjs, snap.fds, snap.goroutines, snap.children, mb(snap.childRSS), label)
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
