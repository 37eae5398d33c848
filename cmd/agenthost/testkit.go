//go:build testkit

package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/services"
)

// A binary built with -tags testkit carries the testkit provider: services
// that misbehave on purpose, for the end-to-end tests only. It is a fake,
// named as such, for faults a real provider cannot be made to show on demand.
func init() {
	addTestProviders = func(h *host.Host) error {
		h.OnCall(callTimes.record)
		return h.Registry().Put(testkit{})
	}
}

// callTimes keeps the host's own time of every call (CallRecord.Took), which
// testkit_calls hands to benchmarks; the host logs it only at debug.
var callTimes callLog

type callLog struct {
	mu   sync.Mutex
	took map[string][]int64 // method -> nanoseconds
}

func (l *callLog) record(r host.CallRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.took == nil {
		l.took = map[string][]int64{}
	}
	l.took[r.Method] = append(l.took[r.Method], int64(r.Took))
}

// take returns and forgets the times recorded for method.
func (l *callLog) take(method string) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.took[method]
	delete(l.took, method)
	return out
}

type testkit struct{}

func (testkit) ID() string { return "testkit" }

func (testkit) Services() []services.Service {
	return []services.Service{
		{Name: "testkit_echo", Description: "echo text count times", Parameters: json.RawMessage(`{"type":"object",
			"properties":{"text":{"type":"string","minLength":1,"maxLength":20},"count":{"type":"integer","minimum":1,"maximum":5},"mode":{"type":"string","enum":["a","b"]}},
			"required":["text"]}`)},
		{Name: "testkit_panic", Description: "panics"},
		{Name: "testkit_hang", Description: "never answers", Timeout: 300 * time.Millisecond},
		{Name: "testkit_big", Description: "answers 100 KiB"},
		{Name: "testkit_slow", Description: "answers after ms milliseconds", Parameters: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)},
		{Name: "testkit_calls", Description: "hands over (and forgets) the host's own time of each call of a method, in ns",
			Parameters: json.RawMessage(`{"type":"object","properties":{"method":{"type":"string"}},"required":["method"]}`)},
	}
}

func (testkit) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Text   string
		Count  int
		MS     int
		Method string
	}
	json.Unmarshal(params, &p)
	switch method {
	case "testkit_calls":
		return json.Marshal(callTimes.take(p.Method))
	case "testkit_echo":
		return json.Marshal(strings.Repeat(p.Text, max(p.Count, 1)))
	case "testkit_panic":
		panic("testkit: deliberate panic")
	case "testkit_hang":
		<-ctx.Done()
		return nil, ctx.Err()
	case "testkit_big":
		return json.Marshal(strings.Repeat("x", 100<<10))
	case "testkit_slow":
		select {
		case <-time.After(time.Duration(p.MS) * time.Millisecond):
			return json.Marshal("slept")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, nil
}
