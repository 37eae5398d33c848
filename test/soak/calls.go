package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// A call as the load sends it: the service, its params and a check of a
// successful answer's data.
type callSpec struct {
	service string
	params  string
	check   func(data string) error
}

var simpleTime = regexp.MustCompile(`^"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"$`)

// spec returns the i-th call: the services in turn, so every one gets an
// equal share of the rate.
func spec(i int) callSpec {
	contains := func(want string) func(string) error {
		return func(data string) error {
			if !strings.Contains(data, want) {
				return fmt.Errorf("the answer lacks %q", want)
			}
			return nil
		}
	}
	switch i % len(wantServices) {
	case 0:
		return callSpec{"get_current_time", `{"format":"simple"}`, func(d string) error {
			if !simpleTime.MatchString(d) {
				return errors.New("not a time")
			}
			return nil
		}}
	case 1:
		return callSpec{"builtin_get_current_time", `{"format":"detailed"}`, contains("UTC")}
	case 2:
		return callSpec{"create_file", fmt.Sprintf(`{"filename":"soak/f%02d.txt","content":"call %d"}`, i/6%50, i), func(string) error { return nil }}
	case 3:
		return callSpec{"read_file", `{"filename":"soak/fixed.txt"}`, contains(fixedContent)}
	case 4:
		return callSpec{"list_files", `{"folder":"soak"}`, contains("fixed.txt")}
	default:
		return callSpec{"get_system_info", `{"fields":["hostname","uptime","memory"]}`, contains("uptime")}
	}
}

// How a call the load made ended, as the load saw it.
const (
	okCall       = iota
	failedCall   // success false, or success with a wrong answer, with no drop while in flight
	failedAtDrop // success false while a deliberate drop happened
	noAnswer     // no result within the call timeout, no drop while in flight
	noAnswerDrop // no result, and a deliberate drop happened while in flight
	notSent      // the simulator had no connection to send it on (right after a drop)
	notSentAlone // the same, with no drop in the 10 s before
	atStall      // failed, no answer or not sent while this program (or the machine) stood still
	nClasses
)

// accounts are the load's figures; soak.mu guards them.
type accounts struct {
	attempted  int
	skipped    int // calls not made because this program was late for them (a stall)
	class      [nClasses]int
	latency    []time.Duration // of the successful calls
	perService map[string]*[nClasses]int
	examples   []string // the first few unexplained problems
}

// load starts calls at the rate until ctx ends; calls tracks them. A call
// this program is late for by more than lateSkip (it stood still: a long
// GC, a machine under load) is skipped rather than sent in a burst, so the
// host always sees the steady rate.
func (s *soak) load(ctx context.Context, calls *sync.WaitGroup) {
	const lateSkip = 250 * time.Millisecond
	interval := time.Duration(float64(time.Second) / s.o.rate)
	for i := 0; ; i++ {
		at := s.started.Add(time.Duration(i) * interval)
		sleepUntil(ctx, at)
		if ctx.Err() != nil {
			return
		}
		if time.Since(at) > lateSkip {
			s.mu.Lock()
			s.acct.skipped++
			s.mu.Unlock()
			continue
		}
		calls.Add(1)
		go func() {
			defer calls.Done()
			s.call(i, spec(i))
		}()
	}
}

func (s *soak) call(i int, c callSpec) {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.callTimeout)
	defer cancel()
	t0 := time.Now()
	out, err := s.sim.Call(ctx, c.service, json.RawMessage(c.params))
	t1 := time.Now()
	class, why := okCall, ""
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		class, why = noAnswer, err.Error()
		if s.dropNear(t0, t1) {
			class = noAnswerDrop
		}
	case err != nil:
		class, why = notSent, err.Error()
		if !s.dropNear(t0.Add(-10*time.Second), t1) {
			class = notSentAlone
		}
	case !out.Success:
		class, why = failedCall, "failed: "+out.Error
		if s.dropNear(t0, t1) {
			class = failedAtDrop
		}
	default:
		if cerr := c.check(string(out.Data)); cerr != nil {
			class, why = failedCall, fmt.Sprintf("wrong answer (%v): %.200s", cerr, out.Data)
		}
	}
	if (class == failedCall || class == noAnswer || class == notSentAlone) && s.stallNear(t0.Add(-time.Second), t1) {
		class = atStall
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.acct
	a.attempted++
	a.class[class]++
	if a.perService == nil {
		a.perService = map[string]*[nClasses]int{}
	}
	if a.perService[c.service] == nil {
		a.perService[c.service] = new([nClasses]int)
	}
	a.perService[c.service][class]++
	if class == okCall {
		a.latency = append(a.latency, t1.Sub(t0))
	}
	if (class == failedCall || class == noAnswer || class == notSentAlone) && len(a.examples) < 10 {
		a.examples = append(a.examples, fmt.Sprintf("call %d %s %s at %s: %s", i, c.service, c.params,
			t0.Sub(s.started).Round(time.Millisecond), why))
	}
}
