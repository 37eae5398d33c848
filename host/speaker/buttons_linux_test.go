package speaker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// talkRecorder is a Conversation that records the talk button's calls.
type talkRecorder struct{ ch chan string }

func (talkRecorder) Event(string, map[string]string) {}
func (talkRecorder) Cue([]int16)                     {}
func (talkRecorder) Notify(string) (string, error)   { return "", nil }
func (talkRecorder) RingStopped()                    {}
func (r talkRecorder) TalkStart() (string, error)    { r.ch <- "start"; return "t1", nil }
func (r talkRecorder) TalkStop() (string, error)     { r.ch <- "stop"; return "t1", nil }

// keyReadyLog signals on ready each time the key trigger says it reads the
// terminal ("key trigger ready"), and writes everything to the test's log.
type keyReadyLog struct {
	slog.Handler
	ready chan struct{}
}

func (h keyReadyLog) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "key trigger ready") {
		h.ready <- struct{}{}
	}
	return h.Handler.Handle(ctx, r)
}

func (h keyReadyLog) WithAttrs(as []slog.Attr) slog.Handler {
	return keyReadyLog{h.Handler.WithAttrs(as), h.ready}
}

func (h keyReadyLog) WithGroup(name string) slog.Handler {
	return keyReadyLog{h.Handler.WithGroup(name), h.ready}
}

func lflag(t *testing.T, f *os.File) uint32 {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("TCGETS: %v", err)
	}
	return tio.Lflag
}

// TestAReloadOfTheModeStartsAndStopsThePushToTalkKey: the push-to-talk key
// reads the terminal in manual mode only; server.params.mode is applied by
// a reload, so a reload from vad to manual starts the key (the space bar
// starts a turn), and one from manual back to vad stops it: the press it
// holds is released, the terminal is given back as it was, and the space
// bar no longer starts a turn.
func TestAReloadOfTheModeStartsAndStopsThePushToTalkKey(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer master.Close()
	defer tty.Close()
	stdin := os.Stdin
	os.Stdin = tty // the key reads the daemon's stdin
	defer func() { os.Stdin = stdin }()
	before := lflag(t, tty)

	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	cfg.Audio.Backend = "none"
	cfg.Conversation.PushToTalkKey = true
	cfg.Server.Params.Mode = "vad"
	conv := talkRecorder{ch: make(chan string, 16)}
	ready := make(chan struct{}, 16)
	log := slog.New(keyReadyLog{slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}), ready})
	s, err := New(Options{Config: cfg, Log: log, Registry: services.NewRegistry(services.RegistryOptions{}),
		Current:      func() *config.Config { return cfg },
		Conversation: func() Conversation { return conv }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	parts := s.Triggers()
	if err := part.Start(ctx, ctx, parts, &wg, make(chan error, len(parts))); err != nil {
		t.Fatal(err)
	}
	reload := func(from *config.Config, mode string) *config.Config {
		next := *from
		next.Server.Params.Mode = mode
		s.Reload(from, &next, config.Changed(from, &next))
		return &next
	}
	press := func(want string) {
		t.Helper()
		if _, err := io.WriteString(master, " "); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-conv.ch:
			if got != want {
				t.Fatalf("the space bar: Talk%s, want Talk%s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the space bar: no Talk%s within 10s", want)
		}
	}

	manual := reload(cfg, "manual")
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("after a reload from vad to manual the push-to-talk key does not read the terminal (waited 10s)")
	}
	press("start")
	press("stop")
	press("start") // held as the mode changes

	reload(manual, "vad")
	select {
	case got := <-conv.ch:
		if got != "stop" {
			t.Fatalf("the reload to vad: Talk%s, want TalkStop (the held press released)", got)
		}
	default:
		t.Fatal("the reload to vad left the press of the push-to-talk key held")
	}
	if after := lflag(t, tty); after != before {
		t.Fatalf("after the reload to vad the terminal's mode is %#x, want %#x as before the key took it: the key still reads it", after, before)
	}
	// The terminal, in its own mode again, echoes the space: the line
	// discipline took it, and no key trigger read it.
	if _, err := io.WriteString(master, " "); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, 1)
	if _, err := io.ReadFull(master, echo); err != nil || echo[0] != ' ' {
		t.Fatalf("the echo of the space: %q %v", echo, err)
	}
	select {
	case got := <-conv.ch:
		t.Fatalf("after the reload to vad the space bar still calls Talk%s", got)
	default:
	}
}
