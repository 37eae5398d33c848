package speaker

import (
	"log/slog"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
)

// TestMicButtonIsTheOwners: the microphone button turns off, and back on,
// a microphone that the server's model muted (which it could not undo).
func TestMicButtonIsTheOwners(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	reg := services.NewRegistry(services.RegistryOptions{})
	h, err := New(Options{Config: cfg, Log: slog.New(slog.DiscardHandler), Registry: reg, Current: func() *config.Config { return cfg }})
	if err != nil {
		t.Fatal(err)
	}
	if h.MicButton() != nil {
		t.Fatal("a microphone button without device.mic_button")
	}
	h.dev.SetMicMuted(services.CallerVoiceServer, true)
	b := micButton{h}
	b.Press()
	b.Release()
	if h.dev.MicMuted() {
		t.Fatal("the button did not turn the microphone on")
	}
	b.Press()
	if !h.dev.MicMuted() {
		t.Fatal("the button did not turn the microphone off")
	}
	cfg.Device.MicButton = config.GPIO{Chip: "gpiochip0", Line: 27}
	if h.MicButton() == nil {
		t.Fatal("no microphone button with device.mic_button set")
	}
}
