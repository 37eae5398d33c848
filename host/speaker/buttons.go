package speaker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"

	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/trigger"
)

// errNoConversation: the daemon runs without a conversation.
var errNoConversation = errors.New("no conversation: the daemon runs without audio")

// MicButton returns the part of the microphone's privacy button
// (device.mic_button), or nil when none is configured: each press turns the
// microphone off, or back on, as the owner.
func (s *Speaker) MicButton() part.Part {
	g := s.o.Config.Device.MicButton
	if g.Chip == "" || g.Line < 0 {
		return nil
	}
	return part.Func("microphone button", func(ctx context.Context) error {
		err := trigger.GPIO(ctx, trigger.GPIOOptions{Chip: g.Chip, Line: g.Line}, micButton{s}, s.o.Log)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Error("the microphone button is unavailable; the speaker runs without it (fix device.mic_button, or the unit's gpio group and DeviceAllow, then restart)", "err", err)
		}
		return nil
	})
}

// micButton toggles the microphone's privacy mute; the button is the owner's.
type micButton struct{ s *Speaker }

func (b micButton) Press() {
	d := b.s.dev
	if err := d.SetMicMuted(services.CallerOwner, !d.MicMuted()); err != nil {
		b.s.o.Log.Warn("microphone button", "err", err)
	}
}

func (micButton) Release() {}

// Triggers returns the push-to-talk parts the configuration asks for: the
// space bar when stdin is a terminal (conversation.push_to_talk_key), which
// reads it while server.params.mode is manual (a reload starts and stops
// it), and a GPIO button (conversation.gpio). Both drive the conversation's
// TalkStart and TalkStop, after stopping what rings.
func (s *Speaker) Triggers() []part.Part {
	cfg, log := s.o.Config, s.o.Log
	var out []part.Part
	talk := talkButton{s}
	if s.key != nil {
		out = append(out, s.key)
	}
	if g := cfg.Conversation.GPIO; g.Chip != "" && g.Line >= 0 {
		out = append(out, part.Func("push-to-talk button", func(ctx context.Context) error {
			err := trigger.GPIO(ctx, trigger.GPIOOptions{Chip: g.Chip, Line: g.Line}, talk, log)
			if err != nil && ctx.Err() == nil {
				// Not fatal: exiting would have systemd restart the daemon
				// over and over, and the speaker serves without its button.
				log.Error("push-to-talk button unavailable; the speaker runs without it (fix conversation.gpio, or the unit's gpio group and DeviceAllow, then restart)", "err", err)
			}
			return nil
		}))
	}
	return out
}

// keyTrigger is the push-to-talk key as a part: the terminal is read
// (trigger.Key) only while server.params.mode is manual; in the VAD modes
// the server starts and ends turns, and the key would take the terminal for
// nothing. A reload of the mode starts or stops it (setManual).
type keyTrigger struct {
	h   trigger.Handler
	log *slog.Logger

	mu     sync.Mutex
	manual bool               // the mode is manual: the key should read
	ctx    context.Context    // Run's, while it runs; nil before
	stop   context.CancelFunc // ends the Key that runs; nil when none does
	done   chan struct{}      // closed when that Key has returned
	errc   chan error         // a Key's failure, for Run to return
}

func newKeyTrigger(h trigger.Handler, mode string, log *slog.Logger) *keyTrigger {
	return &keyTrigger{h: h, log: log, manual: mode == "manual", errc: make(chan error, 1)}
}

// Name implements part.Part.
func (*keyTrigger) Name() string { return "push-to-talk key" }

// Run implements part.Part: the key reads the terminal while the mode is
// manual, until ctx ends or it fails.
func (k *keyTrigger) Run(ctx context.Context, ready func()) error {
	k.mu.Lock()
	k.ctx = ctx
	if k.manual {
		k.startLocked()
	}
	k.mu.Unlock()
	ready()
	var err error
	select {
	case <-ctx.Done():
	case err = <-k.errc:
	}
	k.mu.Lock()
	k.stopLocked()
	k.ctx = nil
	k.mu.Unlock()
	return err
}

// setManual starts the key when the mode becomes manual and stops it, with
// its press released and the terminal given back, when it becomes another.
func (k *keyTrigger) setManual(manual bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if manual == k.manual {
		return
	}
	k.manual = manual
	if !manual {
		k.stopLocked()
	} else if k.ctx != nil && k.ctx.Err() == nil {
		k.startLocked()
	}
}

func (k *keyTrigger) startLocked() {
	ctx, stop := context.WithCancel(k.ctx)
	done := make(chan struct{})
	k.stop, k.done = stop, done
	go func() {
		defer close(done)
		if err := trigger.Key(ctx, os.Stdin, k.h, k.log); err != nil && ctx.Err() == nil {
			select {
			case k.errc <- err:
			default:
			}
		}
	}()
}

// stopLocked ends the Key that runs, if any, and waits until it returned.
func (k *keyTrigger) stopLocked() {
	if k.stop == nil {
		return
	}
	k.stop()
	<-k.done
	k.stop, k.done = nil, nil
}

// talkButton is the talk key's and button's trigger.Handler.
type talkButton struct{ s *Speaker }

func (t talkButton) Press() {
	if _, err := t.s.talk("start"); err != nil {
		t.s.o.Log.Warn("push-to-talk: cannot start a turn", "err", err)
	}
}

func (t talkButton) Release() {
	if _, err := t.s.talk("stop"); err != nil {
		t.s.o.Log.Warn("push-to-talk: cannot end the turn", "err", err)
	}
}

// talk starts or ends a turn, as the talk button does: a press first stops
// what rings (and its release is ignored). It answers what it did.
func (s *Speaker) talk(action string) (map[string]string, error) {
	c := s.conv()
	if c == nil {
		return nil, errNoConversation
	}
	var task string
	var err error
	switch action {
	case "start":
		if s.talkStopsRinging("the owner (the talk button)") {
			return map[string]string{"stopped": "ringing"}, nil
		}
		task, err = c.TalkStart()
	case "stop":
		if s.swallowed.CompareAndSwap(true, false) {
			return map[string]string{"stopped": "ringing"}, nil
		}
		task, err = c.TalkStop()
	default:
		err = errors.New(`action must be "start" or "stop"`)
	}
	return map[string]string{"task": task}, err
}
