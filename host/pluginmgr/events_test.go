package pluginmgr

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
)

// TestEventsForAPluginThatIsGoneAreDropped: a crash report or a restart
// timer can fire after the plugin's loop ended (the binary was removed, or
// the host stops). Such an event is dropped without a panic and without
// blocking the sender.
func TestEventsForAPluginThatIsGoneAreDropped(t *testing.T) {
	m := New(Options{Plugins: config.Default().Plugins, RuntimeDir: t.TempDir()}, services.NewRegistry(services.RegistryOptions{}))
	m.mu.Lock()
	p := m.newManaged("gone", "/nonexistent/gone")
	m.mu.Unlock()
	p.send(event{kind: evRemoved})
	m.wg.Wait() // the loop ended
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 100 {
			p.send(event{kind: evRestart})
		}
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("sending to a plugin whose loop ended blocks")
	}
}
