package host

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// notifySocket is a datagram socket standing where systemd's NOTIFY_SOCKET
// is; it records what the daemon says.
type notifySocket struct {
	conn *net.UnixConn
	mu   sync.Mutex
	got  []string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n := &notifySocket{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.got = append(n.got, string(buf[:k]))
			n.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	t.Setenv("NOTIFY_SOCKET", path)
	return n
}

func (n *notifySocket) count(msg string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.got {
		if strings.Contains(m, msg) {
			c++
		}
	}
	return c
}

// TestWatchdogStopsWhenTheLinkLoopHangs: systemd's watchdog must be fed only
// while the parts that can get stuck make progress. Here the link's read
// loop hangs in a frame handler (a tap that never returns, standing for a
// deadlocked consumer): the pings stop, and the log says which part is stuck.
func TestWatchdogStopsWhenTheLinkLoopHangs(t *testing.T) {
	notify := listenNotify(t)
	t.Setenv("WATCHDOG_USEC", "600000") // pings every 200 ms
	sim, err := voicetest.NewServer(voicetest.Options{DisconnectDelay: time.Millisecond, ReplyDuration: 60 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	cfg := config.Default()
	cfg.Server.Address = sim.Addr()
	cfg.Server.Token = "tok"
	cfg.Plugins.RuntimeDir = t.TempDir()
	log := &testbin.Buffer{}
	h, err := New(cfg, slog.New(slog.NewTextHandler(log, nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	h.OnFrame(func(f voice.Frame) {
		if f.Type == voice.TypeText {
			<-release
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() { unblock(); cancel(); <-done }()

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; log:\n%s", what, log)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually("READY and watchdog pings", func() bool { return notify.count("READY=1") == 1 && notify.count("WATCHDOG=1") >= 2 })
	eventually("the link to come up", func() bool { up, _ := h.Link().Up(); return up })
	if _, err := sim.Say("hello"); err != nil {
		t.Fatal(err)
	}
	eventually("the stuck part to be named in the log", func() bool { return strings.Contains(log.String(), "not feeding systemd's watchdog") })
	before := notify.count("WATCHDOG=1")
	time.Sleep(time.Second) // five ping intervals
	if after := notify.count("WATCHDOG=1"); after != before {
		t.Fatalf("%d watchdog pings went out while the link's loop was stuck", after-before)
	}
	unblock()
	eventually("the pings to resume once the loop is free", func() bool { return notify.count("WATCHDOG=1") > before })
}
