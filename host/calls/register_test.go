package calls_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// link records the frames sent on connection 1.
type link struct {
	mu     sync.Mutex
	frames []voice.Frame
}

func (l *link) Send(f voice.Frame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frames = append(l.frames, f)
	return nil
}

func (l *link) Up() (bool, int) { return true, 1 }

func (l *link) sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.frames)
}

// plugin is a provider of one service.
type plugin struct{ name string }

func (p plugin) ID() string { return "plugin:" + p.name }
func (p plugin) Services() []services.Service {
	return []services.Service{{Name: p.name + "_info", Description: "about " + p.name}}
}
func (plugin) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`""`), nil
}

// TestAChangeRightAfterConnectingIsRegisteredAtOnce: the register sent on
// a new connection is the whole set, so a change just after it (a plugin
// installed as the daemon starts) goes out at once, not after the pacing
// interval the changes before the connection started; a change after that
// one is paced again. Time is synctest's: nothing waits for a clock.
func TestAChangeRightAfterConnectingIsRegisteredAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.Default()
		c, err := calls.New(cfg, slog.New(slog.DiscardHandler), func(*config.Config) (map[string]string, []string) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		l := &link{}
		c.SetLink(l)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go c.Serve(ctx)
		if err := c.Registry().Put(plugin{"first"}); err != nil { // before the connection: paced
			t.Fatal(err)
		}
		synctest.Wait()
		c.LinkUp(1)
		if n := l.sent(); n != 1 {
			t.Fatalf("%d frames on connecting, want the register", n)
		}
		if err := c.Registry().Put(plugin{"second"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := c.Registers(); n != 2 {
			t.Fatalf("%d registers after a change right after connecting, want 2 at once", n)
		}
		if err := c.Registry().Put(plugin{"third"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := c.Registers(); n != 2 {
			t.Fatalf("%d registers after a second change within %v, want it paced", n, services.MinChangeInterval)
		}
		time.Sleep(services.MinChangeInterval)
		synctest.Wait()
		if n := c.Registers(); n != 3 {
			t.Fatalf("%d registers once the interval ran out, want 3", n)
		}
		cancel()
		c.Stop()
	})
}
