package host

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
	h, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if h.MicButton() != nil {
		t.Fatal("a microphone button without device.mic_button")
	}
	h.device.SetMicMuted(services.CallerVoiceServer, true)
	b := micButton{h}
	b.Press()
	b.Release()
	if h.device.MicMuted() {
		t.Fatal("the button did not turn the microphone on")
	}
	b.Press()
	if !h.device.MicMuted() {
		t.Fatal("the button did not turn the microphone off")
	}
	cfg.Device.MicButton = config.GPIO{Chip: "gpiochip0", Line: 27}
	if h.MicButton() == nil {
		t.Fatal("no microphone button with device.mic_button set")
	}
}
