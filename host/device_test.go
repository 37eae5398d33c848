package host

import (
	"log/slog"
	"os"
	"strings"
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

// TestAStateFolderOfAnotherUserIsRefused: the host does not keep its state
// (the device's mutes and timers, the plugins' data) in a folder that
// another user owns or any user may write to: that user could put their
// own state there. As root, with a folder owned by nobody (65534).
func TestAStateFolderOfAnotherUserIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give a folder to another user")
	}
	for _, tc := range []struct {
		perm  os.FileMode
		owner int
		want  string
	}{{0o700, 65534, "belongs to user id 65534"}, {0o777, 0, "0777"}} {
		cfg := config.Default()
		cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
		os.Chown(cfg.Plugins.StateDir, tc.owner, tc.owner)
		os.Chmod(cfg.Plugins.StateDir, tc.perm)
		_, err := New(cfg, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), cfg.Plugins.StateDir) {
			t.Errorf("state folder of user %d, mode %04o: err = %v", tc.owner, tc.perm, err)
		}
	}
}
