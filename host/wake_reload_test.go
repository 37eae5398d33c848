package host

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testbin"
)

// TestTurningTheWakeWordOnByAReloadNamesTheKeyThatWaits: turning the wake
// word on or off (conversation.wake_word.models to or from empty) applies
// after a restart; the reload counts it among those that wait (not those
// applied) and says so in a warning that names the setting and the
// restart, as it does for every setting that waits.
func TestTurningTheWakeWordOnByAReloadNamesTheKeyThatWaits(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.RuntimeDir, cfg.Plugins.StateDir = t.TempDir(), t.TempDir()
	cfg.Audio.Backend = "file"
	logs := &testbin.Buffer{}
	h, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	next := *cfg
	next.Conversation.WakeWord.Models = []string{"hey_jarvis"}
	if later := h.Apply(&next); !slices.Contains(later, "conversation.wake_word.models") {
		t.Errorf("the reload that turns the wake word on gives %q as waiting for a restart, want conversation.wake_word.models", later)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "conversation.wake_word.models") && strings.Contains(line, "systemctl restart agenthost") {
			return
		}
	}
	t.Errorf("no warning names conversation.wake_word.models and the restart; the log:\n%s", logs)
}
